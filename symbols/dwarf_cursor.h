// DwarfCursor: bounds-checked little-endian reads over a byte range of a DWARF section.
//
// Shared by the line-table reader (dwarf_image_lines.h) and the DIE reader (dwarf_die_reader.h).
// A failed read marks the cursor bad and moves it to the end, so that a loop over hostile data
// stops instead of reading out of bounds; callers check ok() where it matters.
#ifndef HANGWATCH_SYMBOLS_DWARF_CURSOR_H_
#define HANGWATCH_SYMBOLS_DWARF_CURSOR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hangwatch::symbols {

// A read cursor over [p, end): every read checks the bounds and, on failure, marks the cursor
// bad and returns zero; callers test ok() at the points where it matters.
class DwarfCursor {
 public:
  DwarfCursor(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }
  const uint8_t* pos() const { return p_; }
  size_t left() const { return ok_ ? static_cast<size_t>(end_ - p_) : 0; }

  uint64_t Fixed(size_t n) {  // little-endian, n <= 8
    if (!ok_ || left() < n) return Fail();
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p_[i]} << (8 * i);
    p_ += n;
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; ok_ && p_ < end_; shift += 7) {
      const uint8_t b = *p_++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail();
  }
  int64_t Sleb() {
    uint64_t v = 0;
    for (int shift = 0; ok_ && p_ < end_; shift += 7) {
      const uint8_t b = *p_++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        if (shift + 7 < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(v);
      }
    }
    return static_cast<int64_t>(Fail());
  }
  // A NUL-terminated string in place; null when unterminated.
  const char* CString() {
    if (!ok_) return nullptr;
    const void* nul = std::memchr(p_, 0, static_cast<size_t>(end_ - p_));
    if (nul == nullptr) {
      Fail();
      return nullptr;
    }
    const char* s = reinterpret_cast<const char*>(p_);
    p_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }
  void Skip(uint64_t n) {
    if (!ok_ || n > left()) {
      Fail();
      return;
    }
    p_ += n;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DWARF_CURSOR_H_
