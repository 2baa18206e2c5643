// AddressDieMap against a plain replay of LLVM's insertion rule in one ordered map: the same
// entries for nested subprograms (the grouped fast path), for overlapping ones (identical code
// folding, hot/cold parts interleaved with other functions: the whole replay) and for random
// insertions.
#include "symbols/address_die_map.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hangwatch::symbols {

// Found by argument-dependent lookup from the matchers.
bool operator==(const AddressDieMap::Range& a, const AddressDieMap::Range& b) {
  return std::tie(a.lo, a.hi, a.node) == std::tie(b.lo, b.hi, b.node);
}
void PrintTo(const AddressDieMap::Range& r, std::ostream* os) {
  *os << "[" << r.lo << "," << r.hi << ")->" << r.node;
}

namespace {

using Range = AddressDieMap::Range;

// One insertion, and whether it starts a group (a subprogram).
struct Op {
  bool group;
  uint64_t lo, hi;
  uint32_t node;
};

// LLVM's DWARFUnit::updateAddressDieMap, written out independently.
std::vector<Range> Reference(const std::vector<Op>& ops) {
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> map;
  for (const Op& op : ops) {
    auto b = map.upper_bound(op.lo);
    if (b != map.begin()) {
      --b;
      if (op.lo < b->second.first) {
        const auto old = *b;
        if (op.hi < old.second.first) map[op.hi] = old.second;
        if (op.lo > old.first) map[old.first].first = op.lo;
      }
    }
    map[op.lo] = {op.hi, op.node};
  }
  std::vector<Range> out;
  for (const auto& [lo, v] : map) out.push_back({lo, v.first, v.second});
  return out;
}

std::vector<Range> Build(const std::vector<Op>& ops) {
  AddressDieMap m;
  for (const Op& op : ops) {
    if (op.group) m.BeginGroup();
    m.Insert(op.lo, op.hi, op.node);
  }
  std::vector<Range> out;
  m.Finish(&out);
  return out;
}

TEST(AddressDieMapTest, ChildrenSplitTheirParent) {
  const std::vector<Op> ops = {{true, 0, 100, 1},
                               {false, 10, 20, 2},
                               {false, 30, 40, 3},
                               {false, 30, 35, 4},
                               {true, 200, 300, 5}};
  const std::vector<Range> want = {{0, 10, 1},  {10, 20, 2},  {20, 30, 1},  {30, 35, 4},
                                   {35, 40, 3}, {40, 100, 1}, {200, 300, 5}};
  EXPECT_THAT(Build(ops), ::testing::ElementsAreArray(want));
  EXPECT_THAT(Reference(ops), ::testing::ElementsAreArray(want));
}

TEST(AddressDieMapTest, OverlapAcrossSubprogramsKeepsLlvmsAnswer) {
  // B first, then A starting before B and ending inside it: LLVM leaves B's entry alone, so
  // addresses 50..99 still answer B (greatest start at or below them).
  const std::vector<Op> ops = {{true, 50, 150, 1}, {true, 0, 100, 2}};
  const std::vector<Range> want = {{0, 100, 2}, {50, 150, 1}};
  EXPECT_THAT(Build(ops), ::testing::ElementsAreArray(want));
}

TEST(AddressDieMapTest, IdenticalCodeFoldingAfterASplitParent) {
  const std::vector<Op> ops = {{true, 0, 100, 1}, {false, 10, 20, 2}, {true, 0, 100, 3}};
  EXPECT_THAT(Build(ops), ::testing::ElementsAreArray(Reference(ops)));
}

// Subprograms in shuffled address order, each with a hot part and sometimes a cold part far
// away, and nested inlined ranges inside the hot part, DFS order: real compiler output.
std::vector<Op> NestedProgram(std::mt19937_64& rng, int functions, bool cold_parts) {
  std::vector<int> slots(functions);
  for (int i = 0; i < functions; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<Op> ops;
  uint32_t node = 0;
  for (int slot : slots) {
    const uint64_t base = 0x10000 + static_cast<uint64_t>(slot) * 0x1000;
    ops.push_back({true, base, base + 0x800, node++});
    if (cold_parts && rng() % 3 == 0) {
      const uint64_t cold = 0x1000 + static_cast<uint64_t>(slot) * 0x10;
      ops.push_back({false, cold, cold + 0x10, node - 1});
    }
    // Nested children: a stack of open ranges.
    std::vector<std::pair<uint64_t, uint64_t>> open = {{base, base + 0x800}};
    const int children = static_cast<int>(rng() % 200);
    uint64_t cursor = base;
    for (int c = 0; c < children && !open.empty(); ++c) {
      auto [plo, phi] = open.back();
      cursor = std::max(cursor, plo);
      if (cursor + 4 >= phi) {
        open.pop_back();
        continue;
      }
      const uint64_t lo = cursor + rng() % 4;
      const uint64_t hi = std::min(phi, lo + 1 + rng() % 64);
      if (lo >= hi) continue;
      ops.push_back({false, lo, hi, node++});
      if (rng() % 2 == 0) {
        open.emplace_back(lo, hi);  // descend
      } else {
        cursor = hi;  // next sibling
      }
    }
  }
  return ops;
}

TEST(AddressDieMapTest, NestedSubprogramsMatchTheWholeReplay) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 50; ++round) {
    const auto ops = NestedProgram(rng, 40, /*cold_parts=*/false);
    ASSERT_THAT(Build(ops), ::testing::ElementsAreArray(Reference(ops))) << "round " << round;
  }
}

TEST(AddressDieMapTest, ColdPartsMatchTheWholeReplay) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 50; ++round) {
    const auto ops = NestedProgram(rng, 40, /*cold_parts=*/true);
    ASSERT_THAT(Build(ops), ::testing::ElementsAreArray(Reference(ops))) << "round " << round;
  }
}

TEST(AddressDieMapTest, RandomInsertionsMatchTheWholeReplay) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 500; ++round) {
    std::vector<Op> ops;
    const int n = 1 + static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      const uint64_t lo = rng() % 1000;
      const uint64_t hi = lo + 1 + rng() % 100;
      ops.push_back({rng() % 8 == 0, lo, hi, static_cast<uint32_t>(i)});
    }
    ASSERT_THAT(Build(ops), ::testing::ElementsAreArray(Reference(ops))) << "round " << round;
  }
}

TEST(AddressDieMapTest, GroupsThatMoveTooMuchForAVectorStillMatch) {
  // One subprogram whose children come in descending address order: each vector insertion
  // would move every entry, so the group goes to the ordered map.
  std::vector<Op> ops = {{true, 0, 100000, 0}};
  for (uint32_t i = 1; i < 2000; ++i) {
    const uint64_t lo = 100000 - 50 * static_cast<uint64_t>(i);
    ops.push_back({false, lo, lo + 10, i});
  }
  EXPECT_THAT(Build(ops), ::testing::ElementsAreArray(Reference(ops)));
}

TEST(AddressDieMapTest, FinishForgetsTheInsertions) {
  AddressDieMap m;
  m.BeginGroup();
  m.Insert(0, 10, 1);
  std::vector<Range> out;
  m.Finish(&out);
  ASSERT_EQ(out.size(), 1u);
  out.clear();
  m.Finish(&out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace hangwatch::symbols
