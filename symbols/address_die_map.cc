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
  // Each group alone; every entry remembers its group.
  struct Entry {
    Range range;
    uint32_t group;
  };
  std::vector<Entry> entries;
  entries.reserve(inserts_.size() + inserts_.size() / 2);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Range* begin = inserts_.data() + groups_[g];
    const Range* end =
        inserts_.data() + (g + 1 < groups_.size() ? groups_[g + 1] : inserts_.size());
    scratch_.clear();
    if (!ReplayInVector(begin, end, &scratch_)) {
      scratch_.clear();
      ReplayInTree(begin, end, &scratch_);
    }
    for (const Range& r : scratch_) entries.push_back({r, static_cast<uint32_t>(g)});
  }
  // A group's entries cover exactly the union of its ranges. When no two groups' entries
  // overlap, no insertion met another group's entry in the whole replay either: the entries
  // are the same. The sweep finds an overlap whenever there is one: the first entry that
  // overlaps an earlier one of another group also overlaps the earlier entry reaching
  // furthest (the two earlier ones would overlap each other otherwise).
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.range.lo < b.range.lo; });
  bool disjoint = true;
  uint64_t reach = 0;
  uint32_t reach_group = 0;
  for (size_t i = 0; i < entries.size() && disjoint; ++i) {
    const Entry& e = entries[i];
    if (i > 0 && e.range.lo < reach && e.group != reach_group) disjoint = false;
    if (i == 0 || e.range.hi > reach) {
      reach = e.range.hi;
      reach_group = e.group;
    }
  }
  if (disjoint) {
    out->reserve(out->size() + entries.size());
    for (const Entry& e : entries) out->push_back(e.range);
  } else {
    ReplayInTree(inserts_.data(), inserts_.data() + inserts_.size(), out);
  }
  Clear();
}

}  // namespace hangwatch::symbols
