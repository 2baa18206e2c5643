#include "js/source_positions.h"

namespace hangwatch::js {
namespace {

// One zig-zag varint at table[*at]; false at the end or on a value wider than 64 bits.
bool ReadVarint(const unsigned char* table, size_t size, size_t* at, int64_t* out) {
  uint64_t raw = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*at >= size) return false;
    const unsigned char byte = table[(*at)++];
    raw |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = static_cast<int64_t>(raw >> 1) ^ -static_cast<int64_t>(raw & 1);
      return true;
    }
  }
  return false;
}

}  // namespace

int64_t ScriptOffsetAt(const unsigned char* table, size_t size, int64_t code_offset) {
  int64_t code = 0;
  int64_t position = 0;
  int64_t found = -1;
  bool any = false;
  size_t at = 0;
  while (at < size) {
    int64_t code_delta = 0;
    int64_t position_delta = 0;
    if (!ReadVarint(table, size, &at, &code_delta) ||
        !ReadVarint(table, size, &at, &position_delta)) {
      return -1;
    }
    if (code_delta < 0) code_delta = -code_delta - 1;  // an expression position
    code += code_delta;
    position += position_delta;
    if (code > code_offset) break;
    found = position;
    any = true;
  }
  if (!any || (found & 1) != 0) return -1;
  return ((found >> 1) & 0x3fffffff) - 1;
}

}  // namespace hangwatch::js
