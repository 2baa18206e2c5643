// CollectUnits: units and their address ranges.
#include "symbols/index/internal/dwarf_units.h"

#include <dwarf.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace hangwatch::symbols::internal {

using index_format::CuRange;

namespace {

struct Endpoint {
  uint64_t addr;
  uint32_t unit;
  bool start;
  bool operator<(const Endpoint& o) const { return addr < o.addr; }
};

// LLVM's DWARFDebugAranges::construct: sweep the endpoints; an address covered by several units
// belongs to the lowest one, extending the previous range when possible.
std::vector<CuRange> SweepRanges(std::vector<Endpoint> endpoints) {
  std::stable_sort(endpoints.begin(), endpoints.end());
  std::multiset<uint32_t> valid;
  std::vector<CuRange> out;
  uint64_t prev = ~uint64_t{0};
  for (const Endpoint& e : endpoints) {
    if (prev < e.addr && !valid.empty()) {
      if (!out.empty() && out.back().hi == prev && valid.count(out.back().cu) != 0) {
        out.back().hi = e.addr;
      } else {
        out.push_back({prev, e.addr, *valid.begin(), 0});
      }
    }
    if (e.start) {
      valid.insert(e.unit);
    } else if (auto it = valid.find(e.unit); it != valid.end()) {
      valid.erase(it);
    }
    prev = e.addr;
  }
  return out;
}

}  // namespace

void CollectUnits(Dwarf* dbg, std::vector<UnitRef>* units, std::vector<CuRange>* ranges) {
  std::unordered_map<Dwarf_Off, uint32_t> by_offset;
  std::vector<Endpoint> endpoints;
  std::vector<Dwarf_Die> dies;
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die cudie;
  while (dwarf_get_units(dbg, cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) continue;
    const Dwarf_Off off = dwarf_dieoffset(&cudie);
    by_offset[off] = static_cast<uint32_t>(units->size());
    units->push_back({off, version});
    dies.push_back(cudie);
  }
  std::vector<bool> in_aranges(units->size(), false);
  Dwarf_Aranges* aranges = nullptr;
  size_t naranges = 0;
  if (dwarf_getaranges(dbg, &aranges, &naranges) == 0) {
    for (size_t i = 0; i < naranges; ++i) {
      Dwarf_Addr start;
      Dwarf_Word length;
      Dwarf_Off die_off;
      if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, &die_off) != 0) {
        continue;
      }
      auto it = by_offset.find(die_off);
      if (it == by_offset.end()) continue;
      in_aranges[it->second] = true;
      if (length > 0 && start + length > start) {
        endpoints.push_back({start, it->second, true});
        endpoints.push_back({start + length, it->second, false});
      }
    }
  }
  for (uint32_t u = 0; u < units->size(); ++u) {
    if (in_aranges[u]) continue;
    ptrdiff_t off = 0;
    Dwarf_Addr base, start, end;
    while ((off = dwarf_ranges(&dies[u], off, &base, &start, &end)) > 0) {
      if (start < end) {
        endpoints.push_back({start, u, true});
        endpoints.push_back({end, u, false});
      }
    }
  }
  *ranges = SweepRanges(std::move(endpoints));
}

}  // namespace hangwatch::symbols::internal
