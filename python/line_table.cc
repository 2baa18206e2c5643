#include "python/line_table.h"

#include <climits>

namespace hangwatch::python {

LineTableFormat LineTableFormatFor(int minor) {
  return minor <= 10 ? LineTableFormat::kPairs310 : LineTableFormat::kLocations311;
}

// The line of a range: the running line, which must be a line number (deltas are added in
// 64 bits, so a garbage table cannot overflow it before this check).
bool LineTableCursor::SetLine(int64_t line, int* out) {
  if (line < 0 || line > INT_MAX) return false;
  *out = static_cast<int>(line);
  return true;
}

bool LineTableCursor::Next(LineRange* out) {
  if (malformed_) return false;
  return format_ == LineTableFormat::kPairs310 ? NextPairs(out) : NextLocation(out);
}

// 3.10: empty ranges (byte delta 0) only move the line; they are folded into the next range,
// as CPython's own lookup (_PyLineTable_NextAddressRange) skips them.
bool LineTableCursor::NextPairs(LineRange* out) {
  while (pos_ + 2 <= size_) {
    const unsigned bytes = table_[pos_];
    // A signed byte: two's complement spelled out.
    const unsigned raw = table_[pos_ + 1];
    const int delta = raw < 128 ? static_cast<int>(raw) : static_cast<int>(raw) - 256;
    pos_ += 2;
    int line = -1;
    bool ok = true;
    if (delta != -128) {
      line_ += delta;
      ok = SetLine(line_, &line);
    }
    if (bytes == 0 && ok) continue;
    if (bytes % 2 != 0 || !ok) {  // offsets are in bytes of 2-byte code units
      malformed_ = true;
      return false;
    }
    out->start = addr_;
    addr_ += bytes / 2;
    out->end = addr_;
    out->line = line;
    return true;
  }
  if (pos_ != size_) malformed_ = true;
  return false;
}

// Varints of the location table: 6-bit chunks, least significant first; bit 6 says another
// chunk follows.
bool LineTableCursor::ReadVarint(uint32_t* out) {
  uint32_t value = 0;
  for (unsigned shift = 0; shift < 32; shift += 6) {
    if (pos_ >= size_) return false;
    const uint8_t b = table_[pos_++];
    if ((b & 0x80) != 0) return false;  // the next entry's header: this entry is cut short
    value |= static_cast<uint32_t>(b & 0x3f) << shift;
    if ((b & 0x40) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

bool LineTableCursor::ReadSignedVarint(int32_t* out) {
  uint32_t v = 0;
  if (!ReadVarint(&v)) return false;
  const int32_t magnitude = static_cast<int32_t>(v >> 1);
  *out = (v & 1) != 0 ? -magnitude : magnitude;
  return true;
}

bool LineTableCursor::NextLocation(LineRange* out) {
  if (pos_ >= size_) return false;
  const uint8_t header = table_[pos_++];
  if ((header & 0x80) == 0) {
    malformed_ = true;
    return false;
  }
  const unsigned code = (header >> 3) & 15;
  const int64_t length = (header & 7) + 1;
  bool ok = true;
  uint32_t skip = 0;
  int32_t delta = 0;
  switch (code) {
    case 15:  // no location
      break;
    case 14:  // long form: line delta, end-line delta, start column + 1, end column + 1
      ok = ReadSignedVarint(&delta) && ReadVarint(&skip) && ReadVarint(&skip) && ReadVarint(&skip);
      line_ += delta;
      break;
    case 13:  // no columns: line delta
      ok = ReadSignedVarint(&delta);
      line_ += delta;
      break;
    case 10:
    case 11:
    case 12:  // one-line form: line delta in the code, then start and end columns (bytes)
      ok = pos_ + 2 <= size_;
      pos_ += 2;
      line_ += static_cast<int>(code) - 10;
      break;
    default:  // short form (0-9): same line, one byte of columns
      ok = pos_ + 1 <= size_;
      pos_ += 1;
      break;
  }
  int line = -1;
  if (ok && code != 15) ok = SetLine(line_, &line);
  if (!ok) {
    malformed_ = true;
    return false;
  }
  out->start = addr_;
  addr_ += length;
  out->end = addr_;
  out->line = line;
  return true;
}

int LineForOffset(LineTableFormat format, const uint8_t* table, size_t size, int first_line,
                  int64_t offset) {
  if (offset < 0) return first_line;
  LineTableCursor cursor(format, table, size, first_line);
  LineRange r;
  while (cursor.Next(&r)) {
    if (offset >= r.start && offset < r.end) return r.line;
  }
  return -1;
}

}  // namespace hangwatch::python
