// LEB128: the variable-length integers of DWARF (.debug_info, .debug_line, abbreviations) and of
// the symbol index's map, line and name data (symbol_index_format.h). The one decoder of the
// project: the DWARF readers (dwarf_cursor.h, dwarf_die_reader.cc) and the index reader
// (symbol_index.cc) all read through it. (The index writer's encoder is internal/index_tables.h.)
//
// Each read works within [p, end) and returns the position after the value, or null when the
// input ends before the value does (truncated). An encoding may be longer than its value needs
// (DWARF producers pad ULEB128 fields with 0x80 bytes): it is read to its last byte, however
// long; value bits beyond the 64th are dropped, as a 64-bit result cannot hold them.
#ifndef HANGWATCH_SYMBOLS_LEB128_H_
#define HANGWATCH_SYMBOLS_LEB128_H_

#include <cstdint>

namespace hangwatch::symbols {

namespace leb128_internal {

// The value bits of one encoding, low group first, into *bits; *last_shift is the position of
// its last byte's group (0 for a one-byte encoding), for the sign extension.
inline __attribute__((always_inline)) const uint8_t* ReadGroups(const uint8_t* p,
                                                                const uint8_t* end, uint64_t* bits,
                                                                unsigned* last_shift) {
  uint64_t x = 0;
  // The shift stops growing at 70: past the 64th bit nothing is kept, and a shift that kept
  // growing would wrap (after some 600 MB of 0x80 bytes) and place bits again.
  for (unsigned shift = 0; p < end; shift = shift < 64 ? shift + 7 : shift) {
    const uint8_t b = *p++;
    if (shift < 64) x |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *bits = x;
      *last_shift = shift;
      return p;
    }
  }
  return nullptr;
}

}  // namespace leb128_internal

// Unsigned LEB128. Values under 128 (most of them) take the inlined one-byte path.
inline __attribute__((always_inline)) const uint8_t* ReadUleb(const uint8_t* p, const uint8_t* end,
                                                              uint64_t* v) {
  if (p < end && *p < 0x80) {
    *v = *p;
    return p + 1;
  }
  unsigned last_shift;
  return leb128_internal::ReadGroups(p, end, v, &last_shift);
}

// Signed LEB128: the last byte's bit 6 is the sign, extended over the bits above it.
inline __attribute__((always_inline)) const uint8_t* ReadSleb(const uint8_t* p, const uint8_t* end,
                                                              int64_t* v) {
  if (p < end && *p < 0x80) {
    const uint8_t b = *p;
    *v = (b & 0x40) != 0 ? static_cast<int64_t>(b) - 0x80 : b;
    return p + 1;
  }
  uint64_t x;
  unsigned last_shift;
  p = leb128_internal::ReadGroups(p, end, &x, &last_shift);
  if (p == nullptr) return nullptr;
  if (last_shift + 7 < 64 && (p[-1] & 0x40) != 0) x |= ~uint64_t{0} << (last_shift + 7);
  *v = static_cast<int64_t>(x);
  return p;
}

// Steps over one LEB128 value, signed or not, without decoding it.
inline const uint8_t* SkipLeb(const uint8_t* p, const uint8_t* end) {
  while (p < end) {
    if ((*p++ & 0x80) == 0) return p;
  }
  return nullptr;
}

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_LEB128_H_
