// The pass histogram's layout (every bucket tiles the range, none wider than 1/64 of its lower
// bound) and its figures (percentiles within 0.8 % from 10 us to 10 minutes, exact slow passes).
#include "hangwatch/pass_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace hangwatch {
namespace {

using pass_histogram::BucketLowerNs;
using pass_histogram::BucketOf;
using pass_histogram::BucketUpperNs;
using pass_histogram::kBuckets;

TEST(PassHistogramLayout, BucketsTileTheRangeWithoutGaps) {
  EXPECT_EQ(kBuckets, 1729);
  EXPECT_EQ(BucketOf(0), 0);
  EXPECT_EQ(BucketOf(8191), 0);
  EXPECT_EQ(BucketOf(uint64_t{1} << 40), kBuckets - 1);
  EXPECT_EQ(BucketOf(UINT64_MAX), kBuckets - 1);
  for (int i = 1; i < kBuckets; ++i) {
    ASSERT_EQ(BucketLowerNs(i), BucketUpperNs(i - 1)) << i;
    ASSERT_EQ(BucketOf(BucketLowerNs(i)), i) << i;
    ASSERT_EQ(BucketOf(BucketUpperNs(i) - 1), i) << i;
    const double width = static_cast<double>(BucketUpperNs(i) - BucketLowerNs(i));
    ASSERT_LE(width / static_cast<double>(BucketLowerNs(i)), 1.0 / 64) << i;
  }
}

TEST(PassHistogramFigures, PercentilesAreWithinOnePercentFrom10UsTo10Minutes) {
  for (double ns = 10'000; ns <= 600e9; ns *= 1.37) {
    PassHistogram h;
    h.Add(static_cast<uint64_t>(ns));
    const double got = h.PercentileNs(0.5);
    ASSERT_LE(std::abs(got - ns) / ns, 0.008) << ns;
  }
}

TEST(PassHistogramFigures, KnownPassLengths) {
  // 1,900 x 1 ms, 80 x 20 ms, 20 x 40 ms: the lag contract's example.
  PassHistogram h;
  for (int i = 0; i < 1900; ++i) h.Add(1'000'000);
  for (int i = 0; i < 80; ++i) h.Add(20'000'000);
  for (int i = 0; i < 20; ++i) h.Add(40'000'000);
  const LagFigures f = h.Figures();
  EXPECT_EQ(f.passes, 2000u);
  EXPECT_DOUBLE_EQ(f.busy_ms, 1900 + 80 * 20 + 20 * 40);
  EXPECT_EQ(f.slow_passes[0], 100u);  // > 16 ms
  EXPECT_EQ(f.slow_passes[1], 20u);   // > 33 ms
  EXPECT_EQ(f.slow_passes[2], 0u);    // > 50 ms
  EXPECT_NEAR(f.p50_ms, 1, 0.01);
  EXPECT_NEAR(f.p90_ms, 1, 0.01);  // the 1,801st pass of 2,000
  EXPECT_NEAR(f.p95_ms, 20, 0.2);  // the 1,901st: the first 20 ms pass
  EXPECT_NEAR(f.p99_ms, 40, 0.4);  // the 1,981st: the first 40 ms pass
  EXPECT_NEAR(f.max_ms, 40, 0.4);
}

TEST(PassHistogramFigures, SinceIsThePassesInBetween) {
  PassHistogram h;
  for (int i = 0; i < 10; ++i) h.Add(2'000'000);
  const PassHistogram before = h;
  for (int i = 0; i < 5; ++i) h.Add(100'000'000);
  const LagFigures f = h.Since(before).Figures();
  EXPECT_EQ(f.passes, 5u);
  EXPECT_DOUBLE_EQ(f.busy_ms, 500);
  EXPECT_EQ(f.slow_passes[3], 0u);  // > 100 ms: not one (exactly 100 ms is not longer)
  EXPECT_EQ(f.slow_passes[2], 5u);  // > 50 ms
  EXPECT_NEAR(f.p50_ms, 100, 1);
  EXPECT_EQ(PassHistogram().Figures().passes, 0u);
  EXPECT_EQ(PassHistogram().Figures().max_ms, 0);
}

}  // namespace
}  // namespace hangwatch
