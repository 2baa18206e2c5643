// LibdwDieWalk: a unit's subprograms and inlined subroutines read through libdw, for the
// units our own DIE reader leaves to libdw (split, cross-unit or dwz references) and for
// comparison with it (SymbolIndexOptions::libdw_dies).
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_LIBDW_DIE_WALK_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_LIBDW_DIE_WALK_H_

#include <elfutils/libdw.h>

#include "symbols/index/internal/subroutine_nodes.h"

namespace hangwatch::symbols::internal {

class LibdwDieWalk : public SubroutineNodes {
 public:
  using SubroutineNodes::SubroutineNodes;

  // Walks the DIEs below `unit_die` (a unit's, or its split unit's), adding nodes and map
  // entries.
  void Run(Dwarf_Die* unit_die) { Walk(unit_die, nullptr, 0); }

 private:
  // The attributes a node needs, in one pass over the DIE (libdw rescans the abbreviation for
  // every dwarf_attr call).
  struct NodeAttrs {
    Dwarf_Attribute origin, low_pc, high_pc;
    bool has_origin = false;
    bool has_name = false;  // any name attribute on the DIE itself
    bool has_low_pc = false, has_high_pc = false, has_ranges = false;
    Dwarf_Word call_file = 0, call_line = 0, call_column = 0;
  };
  struct Pending {
    Dwarf_Die die;
    uint32_t node;
    Pending* parent;  // enclosing subroutine in the inline chain; null for subprograms
    NodeAttrs attrs;
  };

  static int ScanAttr(Dwarf_Attribute* attr, void* arg);
  NameCache::Entry* NodeName(Pending* p);
  uint32_t Materialize(Pending* p);
  void Ranges(Pending* p);
  void Walk(Dwarf_Die* parent, Pending* sub, int depth);
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_LIBDW_DIE_WALK_H_
