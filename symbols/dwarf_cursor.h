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
#include <string_view>

#include "symbols/leb128.h"

namespace hangwatch::symbols {

// DWARF from this machine's toolchains: little-endian values, read with memcpy.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian hosts only");

// Pointer-level reads within [p, end): each returns the position after the value, or null when
// it does not fit. The cursor below and the DIE reader's hot loop share them.
inline const uint8_t* ReadFixed(const uint8_t* p, const uint8_t* end, size_t n, uint64_t* v) {
  if (static_cast<size_t>(end - p) < n || n > 8) return nullptr;
  switch (n) {
    case 1:
      *v = *p;
      break;
    case 2: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      *v = x;
      break;
    }
    case 4: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      *v = x;
      break;
    }
    case 8:
      std::memcpy(v, p, 8);
      break;
    default: {
      uint64_t x = 0;
      for (size_t i = 0; i < n; ++i) x |= uint64_t{p[i]} << (8 * i);
      *v = x;
    }
  }
  return p + n;
}

// A NUL-terminated string at `offset` of a string section (.debug_str, .debug_line_str); null
// when out of bounds or unterminated. Compilers end these sections with a NUL, which makes
// every offset inside them a terminated string without a search.
inline const char* SectionString(std::string_view section, uint64_t offset) {
  if (offset >= section.size()) return nullptr;
  if (section.back() != '\0' &&
      std::memchr(section.data() + offset, 0, section.size() - offset) == nullptr) {
    return nullptr;
  }
  return section.data() + offset;
}

// A read cursor over [p, end): every read checks the bounds and, on failure, marks the cursor
// bad and returns zero.
class DwarfCursor {
 public:
  DwarfCursor(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }
  const uint8_t* pos() const { return p_; }
  size_t left() const { return ok_ ? static_cast<size_t>(end_ - p_) : 0; }

  uint64_t Fixed(size_t n) {  // little-endian, n <= 8
    uint64_t v;
    return ok_ && Advance(ReadFixed(p_, end_, n, &v)) ? v : 0;
  }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint64_t Uleb() {
    uint64_t v;
    return ok_ && Advance(ReadUleb(p_, end_, &v)) ? v : 0;
  }
  int64_t Sleb() {
    int64_t v;
    return ok_ && Advance(ReadSleb(p_, end_, &v)) ? v : 0;
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
  // Moves to `next`; a null `next` (the read did not fit) fails the cursor.
  bool Advance(const uint8_t* next) {
    if (next == nullptr) return Fail() != 0;
    p_ = next;
    return true;
  }
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
