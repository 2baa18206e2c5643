// RefineBySchedule (agent/wait_fd_cause.h): which kind a hang's scheduling counters give a busy
// or io hang, with every figure that applies, and how the summary says them
// (report/cause_text.h). The counters are made up here; the end-to-end tests
// (wait_cause_sched_test.cc, wait_cause_ipc_test.cc) read real ones.
#include <gtest/gtest.h>

#include <string>

#include "agent/wait_cause.h"
#include "agent/wait_fd_cause.h"
#include "cause/sched_pressure.h"
#include "report/cause_text.h"

namespace hangwatch::agent {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// One second of a busy hang that ran `cpu_permille` of it and waited for a CPU the rest.
cause::SchedPressure Busy(uint32_t cpu_permille) {
  cause::SchedPressure p;
  p.duration_ns = kSecond;
  p.has_run_delay = true;
  p.cpu_ns = uint64_t{cpu_permille} * 1'000'000;
  p.run_delay_ns = static_cast<uint64_t>(kSecond) - p.cpu_ns;
  p.run_delay_permille = 1000 - cpu_permille;
  p.starved = p.run_delay_permille >= 500;
  p.has_faults = true;
  return p;
}

void Throttle(cause::SchedPressure* p, uint64_t times, uint64_t ms) {
  p->has_cgroup = true;
  p->nr_throttled = times;
  p->throttled_usec = ms * 1000;
  p->throttled = times > 0;
}

void Pressure(cause::SchedPressure::Resource* r, uint32_t permille, double avg10) {
  r->present = true;
  r->some_permille = permille;
  r->some_us = permille * 1000;
  r->some_avg10 = avg10;
  r->full_avg10 = avg10 / 2;
}

WaitCause Refined(const cause::SchedPressure& p, CauseKind kind = CauseKind::kNone) {
  WaitCause c;
  c.kind = kind;
  RefineBySchedule(p, &c);
  return c;
}

TEST(RefineByScheduleTest, AWaitForACpuThatWasTheQuotasIsThrottled) {
  cause::SchedPressure p = Busy(100);  // waited 900 ms
  Throttle(&p, 90, 850);
  Pressure(&p.cpu, 450, 30.0);  // its own waits count in the machine's CPU pressure
  const WaitCause c = Refined(p);
  EXPECT_EQ(c.kind, CauseKind::kThrottled);
  EXPECT_EQ(c.nr_throttled, 90u);
  EXPECT_EQ(c.throttled_ns, 850'000'000u);
  EXPECT_EQ(c.run_delay_ns, 900'000'000u);
  EXPECT_STREQ(c.pressure_resource, "cpu");
}

TEST(RefineByScheduleTest, AWaitForACpuMostlyNotTheQuotasIsStarvedAndSaysTheRest) {
  cause::SchedPressure p = Busy(200);  // waited 800 ms
  Throttle(&p, 2, 20);
  Pressure(&p.cpu, 600, 45.0);
  Pressure(&p.io, 150, 5.0);
  p.runnable_others = 3;
  const WaitCause c = Refined(p);
  EXPECT_EQ(c.kind, CauseKind::kStarved);
  EXPECT_EQ(c.run_delay_ns, 800'000'000u);
  EXPECT_EQ(c.runnable_threads, 3u);
  EXPECT_EQ(c.nr_throttled, 2u);
  EXPECT_STREQ(c.pressure_resource, "cpu") << "the resource the machine stalled on most";
  EXPECT_EQ(c.pressure_some_avg10_centi, 4500u);
  EXPECT_EQ(c.pressure_full_avg10_centi, 2250u);
}

TEST(RefineByScheduleTest, AThreadThatKeptItsCpuOnAMachineShortOfCpuIsPressure) {
  cause::SchedPressure p = Busy(990);
  Pressure(&p.cpu, 500, 12.5);
  const WaitCause c = Refined(p);
  EXPECT_EQ(c.kind, CauseKind::kPressure);
  EXPECT_STREQ(c.pressure_resource, "cpu");
  EXPECT_EQ(c.pressure_some_avg10_centi, 1250u);
  // Throttled without waiting much still says throttled (its quota was reached).
  Throttle(&p, 1, 3);
  EXPECT_EQ(Refined(p).kind, CauseKind::kThrottled);
}

TEST(RefineByScheduleTest, QuietCountersLeaveABusyHangAComputationAndOtherKindsAlone) {
  cause::SchedPressure p = Busy(990);
  Pressure(&p.cpu, 50, 1.0);  // under 10 % of the hang
  EXPECT_EQ(Refined(p).kind, CauseKind::kNone);
  Pressure(&p.cpu, 900, 80.0);
  Throttle(&p, 50, 500);
  EXPECT_EQ(Refined(p, CauseKind::kLock).kind, CauseKind::kLock);
  EXPECT_EQ(Refined(p, CauseKind::kIpc).kind, CauseKind::kIpc);
  // An io hang is not explained by the machine's CPU, but by its I/O.
  p.major_faults = 7;
  const WaitCause io = Refined(p, CauseKind::kIo);
  EXPECT_EQ(io.kind, CauseKind::kIo);
  EXPECT_EQ(io.major_faults, 7u);
  Pressure(&p.io, 300, 20.0);
  const WaitCause stalled = Refined(p, CauseKind::kIo);
  EXPECT_EQ(stalled.kind, CauseKind::kPressure);
  EXPECT_STREQ(stalled.pressure_resource, "io");
}

TEST(RefineByScheduleTest, TheSummarySaysEveryFigure) {
  Cause c;
  c.kind = CauseKind::kStarved;
  c.run_delay_ms = 800;
  c.runnable_threads = 3;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "runnable but not running: waited 800 ms for a CPU, 3 other threads of the process "
            "runnable");
  c.pressure_resource = "cpu";
  c.pressure_some_avg10 = 45;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "runnable but not running: waited 800 ms for a CPU, 3 other threads of the process "
            "runnable; machine pressure: cpu (some avg10 45.0 %)");
  c.kind = CauseKind::kPressure;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "machine pressure: cpu (some avg10 45.0 %): the machine was short of cpu");
  c.kind = CauseKind::kThrottled;
  c.nr_throttled = 90;
  c.throttled_ms = 850;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "the cgroup's CPU quota throttled the process 90 times, for 850 ms: waited 800 ms for "
            "a CPU; machine pressure: cpu (some avg10 45.0 %)");
  c.kind = CauseKind::kStarved;
  c.pressure_resource.clear();
  c.runnable_threads = 0;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "runnable but not running: waited 800 ms for a CPU; the cgroup's CPU quota throttled "
            "the process 90 times, for 850 ms");
  c.runnable_threads = 1;
  c.nr_throttled = 0;
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "runnable but not running: waited 800 ms for a CPU, 1 other thread of the process "
            "runnable");
}

}  // namespace
}  // namespace hangwatch::agent
