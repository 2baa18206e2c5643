#include "agent/core/hang_ring.h"

#include <gtest/gtest.h>

#include <vector>

namespace hangwatch::agent {
namespace {

TEST(HangRingTest, KeepsTheNewestNNewestFirst) {
  constexpr size_t kCapacity = 7;
  HangLimits limits;
  HangRing ring(kCapacity, limits);
  HangData hang(limits);
  for (uint64_t i = 0; i < kCapacity + 5; ++i) {
    hang.Clear();
    hang.summary.hang_id = i;
    const uintptr_t f[] = {0x100 + i, 0x200};
    hang.AddSample(0, f, 2, f[0], 0, 'R', true);
    ring.Push(hang);
  }
  std::vector<uint64_t> ids;
  ring.ForEachNewestFirst([&](const HangData& h) {
    ids.push_back(h.summary.hang_id);
    EXPECT_EQ(h.stacks().frames(0)[0], 0x100 + h.summary.hang_id);
  });
  EXPECT_EQ(ids, (std::vector<uint64_t>{11, 10, 9, 8, 7, 6, 5}));
  EXPECT_EQ(ring.size(), kCapacity);
  EXPECT_EQ(ring.pushed(), kCapacity + 5);
}

TEST(HangRingTest, FewerThanCapacity) {
  HangLimits limits;
  HangRing ring(4, limits);
  HangData hang(limits);
  hang.summary.hang_id = 42;
  ring.Push(hang);
  std::vector<uint64_t> ids;
  ring.ForEachNewestFirst([&](const HangData& h) { ids.push_back(h.summary.hang_id); });
  EXPECT_EQ(ids, std::vector<uint64_t>{42});
}

TEST(HangDataTest, TimelineIsCappedButStacksKeepCounting) {
  HangLimits limits;
  limits.max_timeline = 3;
  HangData hang(limits);
  const uintptr_t f[] = {1, 2};
  for (int i = 0; i < 5; ++i) hang.AddSample(static_cast<uint32_t>(i), f, 2, 1, 1000, 'R', true);
  hang.AddSample(6, nullptr, 0, 0, 0, 'D', false);
  EXPECT_EQ(hang.timeline_size(), 3u);
  EXPECT_TRUE(hang.summary.timeline_truncated);
  EXPECT_EQ(hang.summary.samples, 5u);
  EXPECT_EQ(hang.summary.failed_samples, 1u);
  EXPECT_EQ(hang.stacks().entry(0).count, 5u);
  EXPECT_EQ(hang.timeline()[2].t_ms, 2u);
  EXPECT_EQ(hang.timeline()[2].cpu_us, 1u);
}

TEST(HangDataTest, Classify) {
  EXPECT_EQ(HangData::Classify(95, 100, true), HangClass::kBusy);
  EXPECT_EQ(HangData::Classify(5, 100, true), HangClass::kBlocked);
  EXPECT_EQ(HangData::Classify(50, 100, true), HangClass::kMixed);
  EXPECT_EQ(HangData::Classify(50, 100, false), HangClass::kUnknown);
  // Runnable in every sample but starved of CPU by other load: still a computation.
  EXPECT_EQ(HangData::Classify(40, 100, true, 10, 10), HangClass::kBusy);
  // Little CPU but often runnable: not clearly waiting.
  EXPECT_EQ(HangData::Classify(20, 100, true, 5, 10), HangClass::kMixed);
  EXPECT_EQ(HangData::Classify(20, 100, true, 1, 10), HangClass::kBlocked);
}

}  // namespace
}  // namespace hangwatch::agent
