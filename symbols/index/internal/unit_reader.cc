// ReadUnit: a unit's lines and subroutines.
#include "symbols/index/internal/unit_reader.h"

#include <dwarf.h>

#include "symbols/index/internal/fast_die_walk.h"
#include "symbols/index/internal/libdw_die_walk.h"
#include "symbols/index/internal/unit_lines.h"

namespace hangwatch::symbols::internal {

void ReadUnit(ThreadState* thread, const LineSections& lines, const DieSections* dies,
              const std::vector<uint64_t>* only, Dwarf_Die* cudie, int version, IndexUnit* out) {
  ++thread->unit;
  thread->die_map.Clear();
  out->read = true;
  UnitLines(&lines, &thread->table, &thread->file_index, only, out).Read(cudie, version);
  // Split DWARF: the DIEs live in the .dwo unit when libdw found it; lines stay here.
  Dwarf_Die subdie;
  uint8_t unit_type = 0;
  Dwarf_Die* tree = cudie;
  if (cudie->cu != nullptr &&
      dwarf_cu_info(cudie->cu, nullptr, &unit_type, nullptr, &subdie, nullptr, nullptr, nullptr) ==
          0 &&
      unit_type == DW_UT_skeleton && subdie.addr != nullptr) {
    tree = &subdie;
  }
  // Our own DIE reader first; libdw for what it leaves to libdw, from a clean slate.
  const bool fast = dies != nullptr && !dies->info.empty() && !dies->abbrev.empty();
  if (tree != cudie || !fast ||
      !FastDieWalk(&thread->names, &thread->unit, &thread->die_map, only, out, &thread->dies)
           .Run(*dies, dwarf_dieoffset(cudie) - dwarf_cuoffset(cudie))) {
    thread->die_map.Clear();
    ++thread->unit;  // the names found so far are forgotten with out->names
    out->names.clear();
    out->nodes.clear();
    out->libdw = true;
    LibdwDieWalk(&thread->names, &thread->unit, &thread->die_map, only, out).Run(tree);
  }
  thread->die_map.Finish(&out->map);
}

}  // namespace hangwatch::symbols::internal
