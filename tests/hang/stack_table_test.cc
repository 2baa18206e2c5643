#include "hang/model/stack_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hangwatch::agent {
namespace {

TEST(StackTableTest, IdenticalStacksAreStoredOnceWithCountsAndTimes) {
  StackTable table(8, 16);
  const uintptr_t a[] = {0x10, 0x20, 0x30};
  EXPECT_EQ(table.Insert(a, 3, 0x10, 5, 100), 0u);
  EXPECT_EQ(table.Insert(a, 3, 0x10, 15, 200), 0u);
  EXPECT_EQ(table.Insert(a, 3, 0x10, 25, 300), 0u);
  ASSERT_EQ(table.size(), 1u);
  const auto& e = table.entry(0);
  EXPECT_EQ(e.count, 3u);
  EXPECT_EQ(e.first_seen_ms, 5u);
  EXPECT_EQ(e.last_seen_ms, 25u);
  EXPECT_EQ(e.cpu_us, 600u);
  EXPECT_EQ(e.num_frames, 3u);
  EXPECT_EQ(table.frames(0)[2], 0x30u);
}

TEST(StackTableTest, SameFunctionDifferentPcIsOneStackDifferentCallerIsAnother) {
  StackTable table(8, 16);
  const uintptr_t pc1[] = {0x104, 0x20, 0x30};
  const uintptr_t pc2[] = {0x108, 0x20, 0x30};
  const uintptr_t other_caller[] = {0x104, 0x24, 0x30};
  EXPECT_EQ(table.Insert(pc1, 3, 0x100, 0, 0), 0u);
  EXPECT_EQ(table.Insert(pc2, 3, 0x100, 1, 0), 0u);
  EXPECT_EQ(table.Insert(other_caller, 3, 0x100, 2, 0), 1u);
  // Same return addresses, different function for the leaf.
  EXPECT_EQ(table.Insert(pc1, 3, 0x200, 3, 0), 2u);
  // A prefix is a different stack.
  EXPECT_EQ(table.Insert(pc1, 2, 0x100, 4, 0), 3u);
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(table.entry(0).count, 2u);
  EXPECT_EQ(table.frames(0)[0], 0x104u) << "keeps the first sample's pc";
}

TEST(StackTableTest, FullTableRefusesNewStacksButCountsKnownOnes) {
  StackTable table(4, 8);
  for (uintptr_t i = 0; i < 4; ++i) {
    const uintptr_t f[] = {i, 0x99};
    EXPECT_EQ(table.Insert(f, 2, i, 0, 0), i);
  }
  const uintptr_t extra[] = {0x77, 0x99};
  EXPECT_EQ(table.Insert(extra, 2, 0x77, 0, 0), StackTable::kFull);
  const uintptr_t known[] = {2, 0x99};
  EXPECT_EQ(table.Insert(known, 2, 2, 9, 0), 2u);
  EXPECT_EQ(table.entry(2).count, 2u);
}

TEST(StackTableTest, FramesBeyondMaxAreCutAndClearForgets) {
  StackTable table(4, 4);
  std::vector<uintptr_t> deep(100);
  for (size_t i = 0; i < deep.size(); ++i) deep[i] = 0x1000 + i;
  EXPECT_EQ(table.Insert(deep.data(), deep.size(), deep[0], 0, 0), 0u);
  EXPECT_EQ(table.entry(0).num_frames, 4u);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Insert(deep.data(), 3, deep[0], 0, 0), 0u);
  EXPECT_EQ(table.entry(0).count, 1u);
}

TEST(StackTableTest, ManyStacksWithCollidingLowBitsStayDistinct) {
  StackTable table(512, 8);
  for (uintptr_t i = 0; i < 512; ++i) {
    const uintptr_t f[] = {i << 20, 0x4000};
    ASSERT_EQ(table.Insert(f, 2, i << 20, 0, 0), i);
  }
  for (uintptr_t i = 0; i < 512; ++i) {
    const uintptr_t f[] = {i << 20, 0x4000};
    ASSERT_EQ(table.Insert(f, 2, i << 20, 0, 0), i);
    EXPECT_EQ(table.entry(static_cast<uint32_t>(i)).count, 2u);
  }
}

TEST(StackTableTest, CopyFromReproducesTheTable) {
  StackTable a(8, 8), b(8, 8);
  const uintptr_t f[] = {1, 2, 3};
  a.Insert(f, 3, 1, 7, 1);
  a.Insert(f, 3, 1, 9, 1);
  b.CopyFrom(a);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b.entry(0).count, 2u);
  EXPECT_EQ(b.Insert(f, 3, 1, 11, 1), 0u) << "the copy's index finds the stack";
  EXPECT_EQ(b.entry(0).count, 3u);
}

TEST(StackTableTest, TagsAreKeptAsFirstSeenAndAreNotPartOfTheKey) {
  StackTable a(8, 4), b(8, 4);
  const uintptr_t f[] = {1, 2, 3};
  const uint8_t first[] = {1, 2, 4};
  const uint8_t second[] = {1, 4, 4};
  EXPECT_EQ(a.Insert(f, 3, 1, 7, 1, first), 0u);
  EXPECT_EQ(a.Insert(f, 3, 1, 9, 1, second), 0u) << "same frames, same stack";
  EXPECT_EQ(a.entry(0).count, 2u);
  EXPECT_EQ(std::vector<uint8_t>(a.tags(0), a.tags(0) + 3), std::vector<uint8_t>({1, 2, 4}));
  const uintptr_t g[] = {1, 5};
  EXPECT_EQ(a.Insert(g, 2, 1, 9, 1), 1u);
  EXPECT_EQ(std::vector<uint8_t>(a.tags(1), a.tags(1) + 2), std::vector<uint8_t>({0, 0}))
      << "no tags: zeros";
  b.CopyFrom(a);
  EXPECT_EQ(std::vector<uint8_t>(b.tags(0), b.tags(0) + 3), std::vector<uint8_t>({1, 2, 4}));
}

}  // namespace
}  // namespace hangwatch::agent
