// ReadUnit: one compilation unit of the index, read by a worker thread: its line table
// (unit_lines.h) and its subroutines, with our own DIE reader first (fast_die_walk.h) and
// libdw for what that leaves (libdw_die_walk.h).
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_READER_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_READER_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "symbols/address_die_map.h"
#include "symbols/dwarf_die_reader.h"
#include "symbols/dwarf_image_lines.h"
#include "symbols/index/internal/name_cache.h"
#include "symbols/index/internal/symbol_index_writer.h"

namespace hangwatch::symbols::internal {

// What a worker thread keeps from one unit to the next: its name cache, and buffers whose
// capacity is reused (fresh memory for every unit cost a tenth of a build in page faults).
struct ThreadState {
  NameCache names;
  LineTable table;
  AddressDieMap die_map;
  DwarfUnitDies dies;
  absl::flat_hash_map<const char*, uint32_t> file_index;
  uint32_t unit = 0;  // numbers this thread's units (and retries) for NameCache::Entry::unit
};

// Reads the unit of `cudie` (DWARF `version`) into `out`. `only`: when not null, the sorted
// addresses that matter (the cold path). `dies`: the sections for our own DIE reader; null to
// read DIEs with libdw only.
void ReadUnit(ThreadState* thread, const LineSections& lines, const DieSections* dies,
              const std::vector<uint64_t>* only, Dwarf_Die* cudie, int version, IndexUnit* out);

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_UNIT_READER_H_
