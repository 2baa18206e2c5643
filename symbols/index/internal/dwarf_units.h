// CollectUnits: a file's compilation units and which unit covers which address, as LLVM's
// DWARFDebugAranges decides it (.debug_aranges, else each unit's own ranges; an address covered
// by several units belongs to the lowest one).
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_UNITS_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_UNITS_H_

#include <elfutils/libdw.h>

#include <vector>

#include "symbols/index/symbol_index_format.h"

namespace hangwatch::symbols::internal {

struct UnitRef {
  Dwarf_Off die_offset;
  int version;
};

// Appends the compilation units of `dbg` (type units left out) to `units` and sets `ranges`:
// sorted, disjoint address ranges, each with the index of its unit in `units`.
void CollectUnits(Dwarf* dbg, std::vector<UnitRef>* units,
                  std::vector<index_format::CuRange>* ranges);

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_DWARF_UNITS_H_
