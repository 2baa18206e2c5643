// SubroutineNodes: what the two DIE walks of a unit (libdw_die_walk.h, fast_die_walk.h) share:
// the inline-tree nodes they create for subprograms and inlined subroutines with code, the
// address -> DIE map those fill, and which subtrees can hold code at all.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_SUBROUTINE_NODES_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_SUBROUTINE_NODES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "symbols/address_die_map.h"
#include "symbols/index/internal/name_cache.h"
#include "symbols/index/internal/symbol_index_writer.h"

namespace hangwatch::symbols::internal {

class SubroutineNodes {
 public:
  // `unit`: the thread's current unit number (NameCache::Entry::unit). `only`: when not null,
  // the sorted addresses that matter; subroutines that cover none of them are skipped (the cold
  // path reads a few functions, not the whole unit).
  SubroutineNodes(NameCache* names, const uint32_t* unit, AddressDieMap* die_map,
                  const std::vector<uint64_t>* only, IndexUnit* out)
      : names_(names), unit_(unit), die_map_(die_map), only_(only), out_(out) {}

 protected:
  // Hostile DWARF can nest DIEs arbitrarily deep; real code stays far below this.
  static constexpr int kMaxDieDepth = 512;

  // Subtrees that can hold subprograms or inlined subroutines with code.
  static bool MayHoldCode(int tag);

  // Whether a subroutine with the ranges in ranges_ changes an answer: always, unless only
  // some addresses matter and none of them is in those ranges.
  bool Wanted() const;

  // Appends the node of a subroutine (its parent's node, or kNone for a subprogram) and
  // returns its unit-local index.
  uint32_t AddNode(uint32_t parent, NameCache::Entry* name, uint64_t call_file, uint64_t call_line,
                   uint64_t call_column);

  NameCache* names_;
  const uint32_t* unit_;
  AddressDieMap* die_map_;
  const std::vector<uint64_t>* only_;
  IndexUnit* out_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // the current DIE's, scratch
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_SUBROUTINE_NODES_H_
