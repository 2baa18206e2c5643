// FastDieWalk: a unit's subprograms and inlined subroutines read with our own DIE reader
// (dwarf_die_reader.h), with the same results as LibdwDieWalk at about 1.6x its speed. A unit
// the reader cannot resolve alone is reported back, to be read again by LibdwDieWalk.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_FAST_DIE_WALK_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_FAST_DIE_WALK_H_

#include <cstdint>

#include "symbols/dwarf_die_reader.h"
#include "symbols/index/internal/subroutine_nodes.h"

namespace hangwatch::symbols::internal {

class FastDieWalk : public SubroutineNodes {
 public:
  // `dies`: the thread's reader (its buffers are reused from unit to unit).
  FastDieWalk(NameCache* names, const uint32_t* unit, AddressDieMap* die_map,
              const std::vector<uint64_t>* only, IndexUnit* out, DwarfUnitDies* dies)
      : SubroutineNodes(names, unit, die_map, only, out), dies_(dies) {}

  // Walks the DIEs of the unit at `unit_offset` of sections.info, adding nodes and map
  // entries. False when the unit must go to libdw (what was added is then to be discarded).
  bool Run(const DieSections& sections, uint64_t unit_offset);

 private:
  struct Attrs {
    DieAttr low_pc{}, high_pc{}, ranges{}, origin{}, sibling{};
    bool has_origin = false, has_name = false;
    bool has_low_pc = false, has_high_pc = false, has_ranges = false;
    uint64_t call_file = 0, call_line = 0, call_column = 0;
  };
  struct Pending {
    uint64_t offset;  // of the DIE
    uint32_t node;
    Pending* parent;
    Attrs attrs;
  };

  static bool ScansAttr(uint32_t name);
  void ScanAttr(const DieAttr& a, Attrs* f);
  const char* Name(uint64_t offset);
  NameCache::Entry* NodeName(Pending* p);
  uint32_t Materialize(Pending* p);
  bool Ranges(const Pending& p);
  uint64_t Walk(uint64_t offset, Pending* sub, int depth);

  DwarfUnitDies* dies_;
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_FAST_DIE_WALK_H_
