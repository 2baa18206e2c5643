// LagReporter's queued + running histogram (agent/core/lag_reporter.h) from a thread's ring of
// passes with a wait (PassContext::delay_moves), written here by hand as the thread writes it:
// what it counts, what it moves, and that a ring overrun is counted as lost, never misread.
#include <gtest/gtest.h>

#include <cstdint>

#include "agent/core/lag_reporter.h"
#include "hangwatch/internal/pass_context.h"
#include "hangwatch/pass_histogram.h"

namespace hangwatch::agent {
namespace {

constexpr uint64_t kMs = 1'000'000;

// A pass of `running_ns` with a delay of `delay_ns`, noted as the thread notes it.
void Note(internal::PassContext* c, uint64_t running_ns, uint64_t delay_ns) {
  const uint64_t n = c->delay_writes.load();
  c->delay_moves[n % internal::kDelayMoveSlots].store(
      internal::DelayMove(static_cast<uint32_t>(pass_histogram::BucketOf(running_ns)),
                          static_cast<uint32_t>(pass_histogram::BucketOf(delay_ns))));
  c->delay_writes.store(n + 1);
}

TEST(LagReporterQueued, MovesEachNotedPassFromItsTimeToItsDelay) {
  internal::PassContext c;
  Note(&c, 1 * kMs, 2 * kMs);  // written before the reporter looked: another watch's
  LagReporter lag(report::Lag{}, 0);
  lag.set_queued_passes(&c);
  PassHistogram counters;
  lag.Begin(counters, 0, 0);
  for (int i = 0; i < 10; ++i) counters.Add(1 * kMs);
  counters.Add(5 * kMs);
  counters.Add(5 * kMs);
  Note(&c, 5 * kMs, 105 * kMs);
  Note(&c, 1 * kMs, 1 * kMs);  // a wait too short to leave its bucket: counted, not moved
  lag.DrainQueuedPasses();
  const auto record = lag.Close(counters, 1, 1);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->queued_passes, 2u);
  EXPECT_EQ(record->queued_passes_lost, 0u);
  EXPECT_EQ(record->passes.passes(), 12u);
  EXPECT_EQ(record->delay.passes(), 12u);
  EXPECT_EQ(record->delay.count(pass_histogram::BucketOf(5 * kMs)), 1u);
  EXPECT_EQ(record->delay.count(pass_histogram::BucketOf(105 * kMs)), 1u);
  EXPECT_EQ(record->delay.count(pass_histogram::BucketOf(1 * kMs)), 10u);
  EXPECT_NEAR(record->delay.Figures().max_ms, 105, 1);
  EXPECT_NEAR(record->passes.Figures().max_ms, 5, 0.1);

  // The next interval starts empty: no wait carried over.
  counters.Add(1 * kMs);
  lag.DrainQueuedPasses();
  const auto next = lag.Close(counters, 2, 2);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->queued_passes, 0u);
  EXPECT_EQ(next->delay.passes(), 0u);
}

// More passes than the ring holds between two looks: the overwritten ones are counted as lost
// (in `delay` at their own time, through `passes`), the rest as they were.
TEST(LagReporterQueued, ARingOverrunIsCountedAsLost) {
  internal::PassContext c;
  LagReporter lag(report::Lag{}, 0);
  lag.set_queued_passes(&c);
  PassHistogram counters;
  lag.Begin(counters, 0, 0);
  const int n = static_cast<int>(internal::kDelayMoveSlots) + 8;
  for (int i = 0; i < n; ++i) {
    counters.Add(1 * kMs);
    Note(&c, 1 * kMs, 50 * kMs);
  }
  lag.DrainQueuedPasses();
  const auto record = lag.Close(counters, 1, 1);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->queued_passes, internal::kDelayMoveSlots);
  EXPECT_EQ(record->queued_passes_lost, 8u);
  EXPECT_EQ(record->delay.count(pass_histogram::BucketOf(50 * kMs)), internal::kDelayMoveSlots);
  EXPECT_EQ(record->delay.count(pass_histogram::BucketOf(1 * kMs)), 8u);
}

// A word outside the histogram's buckets (a torn or foreign write) is skipped, not counted.
TEST(LagReporterQueued, AWordOutsideTheBucketsIsSkipped) {
  internal::PassContext c;
  LagReporter lag(report::Lag{}, 0);
  lag.set_queued_passes(&c);
  PassHistogram counters;
  lag.Begin(counters, 0, 0);
  counters.Add(1 * kMs);
  c.delay_moves[0].store(internal::DelayMove(0xffff, 3));
  c.delay_writes.store(1);
  lag.DrainQueuedPasses();
  const auto record = lag.Close(counters, 1, 1);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->queued_passes, 0u);
}

}  // namespace
}  // namespace hangwatch::agent
