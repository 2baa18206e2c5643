// AddressDieMap: which subroutine DIE answers for each address of a compilation unit, built the
// way LLVM's DWARFUnit::updateAddressDieMap builds it, so that answers match llvm-symbolizer's.
//
// LLVM inserts each subprogram / inlined-subroutine range into an ordered map, parents before
// children: a range whose start falls inside an existing entry splits that entry around itself;
// any other existing entry is left alone, even one the new range overlaps. Lookups take the
// entry with the greatest start at or below the address. Replaying that into one ordered map
// costs a tree descent per range over the whole unit (12 % of an index build).
//
// Here the insertions are recorded in order, cut into groups by the caller (one per
// subprogram and its inlined subroutines). When no two groups' ranges overlap, as in nearly
// every real unit (a function's cold part lands among other functions' code, but not on it),
// no insertion of one group can meet an entry of another, so each group is replayed alone in
// a small sorted vector and the results are put in address order: exactly the entries of the
// whole replay. Otherwise (identical code folding, hostile input) everything is replayed in one
// ordered map, as LLVM does.
#ifndef HANGWATCH_SYMBOLS_ADDRESS_DIE_MAP_H_
#define HANGWATCH_SYMBOLS_ADDRESS_DIE_MAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hangwatch::symbols {

class AddressDieMap {
 public:
  struct Range {
    uint64_t lo, hi;  // [lo, hi), lo < hi
    uint32_t node;
  };

  // Starts a new group of insertions (empty groups are ignored).
  void BeginGroup();
  // Records LLVM's insertion of [lo, hi) -> node; requires lo < hi.
  void Insert(uint64_t lo, uint64_t hi, uint32_t node);
  // Appends the map's entries to `out`, sorted by lo, and forgets the insertions.
  void Finish(std::vector<Range>* out);
  void Clear();

 private:
  // A run of one group's entries with no gap between them: [lo, hi) is their union.
  struct Segment {
    uint64_t lo, hi;
    size_t begin, end;  // in entries_
    size_t group;
  };

  std::vector<Range> inserts_;
  std::vector<size_t> groups_;  // index of each group's first insertion
  // Finish's buffers, kept for the next unit.
  std::vector<Range> scratch_, entries_;
  std::vector<Segment> segments_;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_ADDRESS_DIE_MAP_H_
