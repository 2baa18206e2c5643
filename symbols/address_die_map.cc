// AddressDieMap: grouped replay of LLVM's address -> DIE map insertions.
#include "symbols/address_die_map.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/btree_map.h"

namespace hangwatch::symbols {
namespace {

using Range = AddressDieMap::Range;

// Replaying a group in a vector moves the entries after each insertion point. A big function's
// inlined ranges come in no particular address order, so a few hundred entries move per
// insertion; a memmove of that size still beats an ordered map's node walk. The budget keeps
// a pathological group (tens of thousands of ranges in one function) from going quadratic: past
// it, the group is replayed in an ordered map instead.
constexpr size_t kMovesPerInsertion = 512;

bool LoLess(const Range& r, uint64_t lo) { return r.lo < lo; }
bool LessLo(uint64_t lo, const Range& r) { return lo < r.lo; }

// map[key] = {hi, node} on a vector sorted by lo; adds the entries moved to *moved.
void Assign(std::vector<Range>* v, uint64_t key, uint64_t hi, uint32_t node, size_t* moved) {
  auto it = std::lower_bound(v->begin(), v->end(), key, LoLess);
  if (it != v->end() && it->lo == key) {
    it->hi = hi;
    it->node = node;
  } else {
    *moved += static_cast<size_t>(v->end() - it);
    v->insert(it, Range{key, hi, node});
  }
}

// False when the insertions move too much (the caller replays them in an ordered map).
bool ReplayInVector(const Range* begin, const Range* end, std::vector<Range>* v) {
  const size_t budget = kMovesPerInsertion * static_cast<size_t>(end - begin) + 64;
  size_t moved = 0;
  for (const Range* r = begin; r != end && moved <= budget; ++r) {
    auto b = std::upper_bound(v->begin(), v->end(), r->lo, LessLo);
    if (b != v->begin() && r->lo < std::prev(b)->hi) {
      Range& e = *std::prev(b);
      const Range old = e;
      if (r->lo > old.lo) e.hi = r->lo;
      if (r->hi < old.hi) Assign(v, r->hi, old.hi, old.node, &moved);
    }
    Assign(v, r->lo, r->hi, r->node, &moved);
  }
  return moved <= budget;
}

void ReplayInTree(const Range* begin, const Range* end, std::vector<Range>* out) {
  absl::btree_map<uint64_t, std::pair<uint64_t, uint32_t>> map;
  for (const Range* r = begin; r != end; ++r) {
    // (btree iterators do not survive insertions: copy what is needed first.)
    auto b = map.upper_bound(r->lo);
    if (b != map.begin() && r->lo < std::prev(b)->second.first) {
      --b;
      const uint64_t b_lo = b->first;
      const std::pair<uint64_t, uint32_t> b_val = b->second;
      if (r->lo > b_lo) b->second.first = r->lo;
      if (r->hi < b_val.first) map[r->hi] = b_val;
    }
    map[r->lo] = {r->hi, r->node};
  }
  for (const auto& [lo, entry] : map) out->push_back({lo, entry.first, entry.second});
}

}  // namespace

void AddressDieMap::BeginGroup() {
  if (groups_.empty() || groups_.back() != inserts_.size()) groups_.push_back(inserts_.size());
}

void AddressDieMap::Insert(uint64_t lo, uint64_t hi, uint32_t node) {
  if (groups_.empty()) groups_.push_back(0);
  inserts_.push_back({lo, hi, node});
}

void AddressDieMap::Clear() {
  inserts_.clear();
  groups_.clear();
}

void AddressDieMap::Finish(std::vector<Range>* out) {
  // Each group alone, its entries (sorted) appended to entries_ and cut into segments: runs of
  // entries without a gap between them. A segment covers exactly the union of its entries.
  entries_.clear();
  segments_.clear();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Range* begin = inserts_.data() + groups_[g];
    const Range* end =
        inserts_.data() + (g + 1 < groups_.size() ? groups_[g + 1] : inserts_.size());
    scratch_.clear();
    if (!ReplayInVector(begin, end, &scratch_)) {
      scratch_.clear();
      ReplayInTree(begin, end, &scratch_);
    }
    for (const Range& r : scratch_) {
      if (segments_.empty() || segments_.back().group != g || r.lo > segments_.back().hi) {
        segments_.push_back({r.lo, r.hi, entries_.size(), entries_.size(), g});
      }
      Segment& seg = segments_.back();
      seg.hi = std::max(seg.hi, r.hi);
      ++seg.end;
      entries_.push_back(r);
    }
  }
  // When no two groups' entries overlap, no insertion met another group's entry in the whole
  // replay either: the entries are the same. Segments of one group never overlap (they are cut
  // at gaps), so in address order any overlap is between groups.
  std::sort(segments_.begin(), segments_.end(),
            [](const Segment& a, const Segment& b) { return a.lo < b.lo; });
  bool disjoint = true;
  for (size_t i = 1; i < segments_.size() && disjoint; ++i) {
    disjoint = segments_[i - 1].hi <= segments_[i].lo;
  }
  if (disjoint) {
    out->reserve(out->size() + entries_.size());
    for (const Segment& seg : segments_) {
      out->insert(out->end(), entries_.begin() + static_cast<ptrdiff_t>(seg.begin),
                  entries_.begin() + static_cast<ptrdiff_t>(seg.end));
    }
  } else {
    ReplayInTree(inserts_.data(), inserts_.data() + inserts_.size(), out);
  }
  Clear();
}

}  // namespace hangwatch::symbols
