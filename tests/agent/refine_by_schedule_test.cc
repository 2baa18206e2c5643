// RefineBySchedule (agent/samplers/wait_fd_cause.h): which kind a hang's scheduling counters give a
// busy or io hang, with every figure that applies, and how the summary says them
// (report/cause_text.h). The counters are made up here; the end-to-end tests
// (wait_cause_sched_test.cc, wait_cause_ipc_test.cc) read real ones.
#include <gtest/gtest.h>

#include <string>

#include "agent/samplers/wait_fd_cause.h"
#include "cause/sched_pressure.h"
#include "hang/model/wait_cause.h"
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

// One second of a busy hang: `cpu_ms` on the CPU, `run_delay_ms` waiting for one, the rest
// blocked off the CPU (asleep outside any system call: a fault, memory reclaim).
cause::SchedPressure Pass(uint64_t cpu_ms, uint64_t run_delay_ms, uint64_t major_faults = 0) {
  cause::SchedPressure p;
  p.duration_ns = kSecond;
  p.has_run_delay = true;
  p.cpu_ns = cpu_ms * 1'000'000;
  p.run_delay_ns = run_delay_ms * 1'000'000;
  p.run_delay_permille = static_cast<uint32_t>(run_delay_ms);
  p.starved = p.run_delay_permille >= 500;
  p.has_faults = true;
  p.major_faults = major_faults;
  return p;
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

// The machine was short of CPU (its pressure "some" at 50 % of the hang) but the main thread
// kept its CPU: the machine's state explains nothing of the pass, a computation.
TEST(RefineByScheduleTest, AThreadThatKeptItsCpuOnAMachineShortOfCpuIsAComputation) {
  cause::SchedPressure p = Busy(990);
  Pressure(&p.cpu, 500, 12.5);
  EXPECT_EQ(Refined(p).kind, CauseKind::kNone);
  // Waiting for a CPU for 15 % of the hang: not yet a material part of it.
  p = Busy(850);
  Pressure(&p.cpu, 500, 40.0);
  EXPECT_EQ(Refined(p).kind, CauseKind::kNone);
  // Throttled without waiting much still says throttled (its quota was reached).
  Throttle(&p, 1, 3);
  EXPECT_EQ(Refined(p).kind, CauseKind::kThrottled);
}

// A busy hang that waited for a CPU for a material part of it (20 % or more, under the half of
// starved) is the machine's CPU pressure, whatever the machine's 10-second average says, and
// its summary says how long it waited.
TEST(RefineByScheduleTest, AMaterialWaitForACpuIsCpuPressure) {
  cause::SchedPressure p = Busy(700);  // waited 300 ms
  Pressure(&p.cpu, 320, 7.9);
  p.runnable_others = 1;
  const WaitCause c = Refined(p);
  EXPECT_EQ(c.kind, CauseKind::kPressure);
  EXPECT_STREQ(c.pressure_resource, "cpu");
  EXPECT_EQ(c.run_delay_ns, 300'000'000u);
  EXPECT_EQ(c.pressure_some_avg10_centi, 790u);
  Cause out;
  out.kind = CauseKind::kPressure;
  out.pressure_resource = c.pressure_resource;
  out.pressure_some_avg10 = 7.9;
  out.run_delay_ms = 300;
  EXPECT_EQ(report::DescribeCause(out, 1000),
            "machine pressure: cpu (some avg10 7.9 %): waited 300 ms for a CPU");
  // Without /proc/pressure the thread's own wait still tells it.
  p.cpu = {};
  EXPECT_EQ(Refined(p).kind, CauseKind::kPressure);
  out.pressure_some_avg10 = 0;
  EXPECT_EQ(report::DescribeCause(out, 1000), "machine pressure: cpu: waited 300 ms for a CPU");
}

// Blocked off the CPU (no system call, no major fault: reclaiming memory) while the machine
// stalled on memory: memory pressure when both are a material part of the hang.
TEST(RefineByScheduleTest, BlockedWhileTheMachineStalledOnMemoryIsMemoryPressure) {
  cause::SchedPressure p = Pass(650, 50);  // blocked 300 ms
  Pressure(&p.memory, 350, 20.0);
  Pressure(&p.cpu, 150, 3.0);
  const WaitCause c = Refined(p);
  EXPECT_EQ(c.kind, CauseKind::kPressure);
  EXPECT_STREQ(c.pressure_resource, "memory");
  // The machine's memory stall under a fifth of the hang, or the thread blocked for less: no.
  Pressure(&p.memory, 150, 20.0);
  EXPECT_EQ(Refined(p).kind, CauseKind::kNone);
  p = Pass(850, 50);  // blocked 100 ms
  Pressure(&p.memory, 600, 20.0);
  EXPECT_EQ(Refined(p).kind, CauseKind::kNone);
}

// A thread that faults on a loaded machine also waits for a CPU after each fault. The larger
// share names it: reading pages in (blocked off the CPU), or waiting for a CPU.
TEST(RefineByScheduleTest, AFaultingThreadThatAlsoWaitedForACpuIsNamedByTheLargerShare) {
  // 250 ms on the CPU, 300 ms waiting for it, 450 ms reading pages in: fault, and it says the
  // wait for a CPU too.
  WaitCause c = Refined(Pass(250, 300, 16000));
  EXPECT_EQ(c.kind, CauseKind::kFault);
  EXPECT_EQ(c.major_faults, 16000u);
  EXPECT_EQ(c.run_delay_ns, 300'000'000u);
  Cause out;
  out.kind = CauseKind::kFault;
  out.major_faults = 16000;
  out.run_delay_ms = 300;
  EXPECT_EQ(report::DescribeCause(out, 1000),
            "16000 major page faults: the main thread waited for pages read in; waited 300 ms "
            "for a CPU");
  // 160 ms on the CPU, 570 ms waiting for it, 270 ms reading pages in (a 2-core machine with
  // two more busy programs): starved, and it says the faults.
  c = Refined(Pass(160, 570, 15000));
  EXPECT_EQ(c.kind, CauseKind::kStarved);
  EXPECT_EQ(c.major_faults, 15000u);
  out.kind = CauseKind::kStarved;
  out.major_faults = 15000;
  out.run_delay_ms = 570;
  EXPECT_EQ(report::DescribeCause(out, 1000),
            "runnable but not running: waited 570 ms for a CPU; 15000 major page faults");
  // Mostly on the CPU, with a few faults: a computation, not a fault.
  EXPECT_EQ(Refined(Pass(700, 50, 40)).kind, CauseKind::kNone);
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
            "machine pressure: cpu (some avg10 45.0 %): waited 800 ms for a CPU");
  c.pressure_resource = "memory";
  EXPECT_EQ(report::DescribeCause(c, 1000),
            "machine pressure: memory (some avg10 45.0 %): the machine was short of memory");
  c.pressure_resource = "cpu";
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
