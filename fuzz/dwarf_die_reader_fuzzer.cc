// libFuzzer target: DwarfUnitDies (symbols/dwarf_die_reader.h), our own DIE decoder, on
// arbitrary bytes. The input is up to eight sections, each as a 32-bit little-endian length and
// its bytes, in the order of DieSections (info, abbrev, str, line_str, str_offsets, addr, ranges,
// rnglists); the run script seeds it with the sections of real binaries. Every unit is walked
// the way the index builder walks it, and every attribute goes through every accessor.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "symbols/dwarf_die_reader.h"

namespace {

using hangwatch::symbols::DieAttr;
using hangwatch::symbols::DieSections;
using hangwatch::symbols::DwarfUnitDies;

// Walks the sibling list at `offset` (depth-first, explicit stack); every DIE's attributes go
// through every accessor.
void Walk(DwarfUnitDies* dies, uint64_t offset) {
  std::vector<uint64_t> stack = {offset};
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int steps = 0; !stack.empty() && steps < 100000; ++steps) {
    DwarfUnitDies::Die d;
    if (!dies->ReadDie(stack.back(), &d)) {
      stack.pop_back();
      if (!dies->ok()) return;
      continue;
    }
    const uint64_t end = dies->ForEachAttr(d, [&](const DieAttr& a) {
      uint64_t v;
      (void)dies->String(a);
      (void)dies->Address(a, &v);
      (void)dies->Constant(a, &v);
      (void)dies->Reference(a, &v);
      ranges.clear();
      (void)dies->Ranges(a, &ranges);
    });
    if (!dies->ok()) return;
    stack.back() = dies->Next(d);
    if (stack.back() == 0) return;
    if (d.has_children && stack.size() < 64) stack.push_back(end);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view parts[8];
  size_t at = 0;
  for (auto& part : parts) {
    if (size - at < 4) break;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t{data[at + i]} << (8 * i);
    at += 4;
    if (n > size - at) n = static_cast<uint32_t>(size - at);
    part = std::string_view(reinterpret_cast<const char*>(data + at), n);
    at += n;
  }
  const DieSections s{parts[0], parts[1], parts[2], parts[3],
                      parts[4], parts[5], parts[6], parts[7]};
  // Each unit in turn (unit_length chains), as the builder visits them.
  uint64_t offset = 0;
  for (int unit = 0; unit < 16 && offset + 4 <= s.info.size(); ++unit) {
    DwarfUnitDies dies;
    if (dies.Open(s, offset)) {
      DwarfUnitDies::Die cu;
      if (dies.ReadDie(dies.unit_die_offset(), &cu) && cu.has_children) {
        const uint64_t first = dies.AttrsEnd(cu);
        if (first != 0) Walk(&dies, first);
      }
      (void)dies.SkipSiblings(dies.unit_die_offset());
    }
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i)
      length |= uint32_t{static_cast<uint8_t>(s.info[offset + i])} << (8 * i);
    if (length == 0 || length >= 0xfffffff0u) break;
    offset += 4 + uint64_t{length};
  }
  return 0;
}
