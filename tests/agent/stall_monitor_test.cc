// The watchdog's logic against a fake clock and a scripted sampler: every duration is exact.
#include "agent/core/stall_monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "agent/samplers/runtime_frames.h"
#include "hang/model/runtime_frame_word.h"
#include "tests/agent/fakes.h"

// Counts every operator new of the test binary: the memory test asserts there is none. The
// replacements pair malloc with free; GCC cannot see that new and delete are both ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace hangwatch::agent {
namespace {

using testing::FakeEnv;
using testing::FakeSampler;
using testing::kMs;
using testing::RecordingListener;

// threshold 100 ms, samples every 10 ms from 50 ms, checks every 10 ms.
MonitorOptions Options() {
  MonitorOptions o;
  o.threshold_ns = 100 * kMs;
  o.sample_interval_ns = 10 * kMs;
  o.early_ns = 50 * kMs;
  o.check_interval_ns = 10 * kMs;
  o.oversleep_tolerance_ns = 100 * kMs;
  o.limits.max_frames = 16;
  o.limits.max_unique_stacks = 8;
  o.limits.max_timeline = 64;
  o.pid = 1;
  return o;
}

class Harness {
 public:
  // `initial_state`: the run-loop state when the monitor is made (odd: a pass under way).
  explicit Harness(MonitorOptions options = Options(), size_t ring_capacity = 8,
                   uint64_t initial_state = 0)
      : state(initial_state),
        sampler(&env),
        ring(ring_capacity, options.limits),
        monitor(options, &state, unwind::ThreadInfo{}, &sampler, &env, &normalizer, &ring,
                &listener, &stats) {
    next_ = monitor.Tick();
  }

  void Begin() {
    const uint64_t v = state.load();
    state.store(v + 1 + (v & 1));
  }
  void End() {
    const uint64_t v = state.load();
    state.store(v + (v & 1));
  }

  // Lets `ns` of time pass, calling Tick() whenever it asked to be called.
  void Run(uint64_t ns) {
    const uint64_t until = env.mono + ns;
    while (next_ <= until) {
      if (next_ > env.mono) env.Advance(next_ - env.mono);
      next_ = monitor.Tick();
    }
    if (until > env.mono) env.Advance(until - env.mono);
  }

  // One pass of `ns`, then idle long enough for the watchdog to see its end.
  void Pass(uint64_t ns) {
    Begin();
    Run(ns);
    End();
    Run(30 * kMs);
  }

  std::atomic<uint64_t> state{0};
  FakeEnv env;
  FakeSampler sampler;
  IdentityLeafNormalizer normalizer;
  HangRing ring;
  RecordingListener listener;
  MonitorStats stats;
  StallMonitor monitor;

 private:
  uint64_t next_ = 0;
};

std::vector<const HangData*> Hangs(const HangRing& ring) {
  std::vector<const HangData*> out;
  ring.ForEachNewestFirst([&](const HangData& h) { out.push_back(&h); });
  return out;
}

TEST(StallMonitorTest, IdleForeverIsNeverAHangAndNeverSampled) {
  Harness h;
  h.Run(60'000 * kMs);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_EQ(h.sampler.captures, 0);
}

// With passes timed, the hang's duration is what the watched thread measured (exact), not
// the watchdog's estimate from its looks (off by up to half a check plus half a sample
// interval); stopped time is still excluded.
TEST(StallMonitorTest, ATimedPassGivesItsHangTheMeasuredDuration) {
  Harness h;
  h.Begin();
  const uint64_t pass = h.state.load();
  h.env.measured.emplace_back(pass, 304'567'891);  // what the watched thread measured
  h.Run(300 * kMs);
  h.End();
  h.Run(30 * kMs);
  auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->summary.duration_ns, 304'567'891u);
  EXPECT_EQ(hangs[0]->summary.phase, HangPhase::kRun);

  // Untimed (nothing measured for it): the estimate, within the intervals of the truth.
  h.Pass(300 * kMs);
  hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 2u);
  EXPECT_GE(hangs[0]->summary.duration_ns, 290 * kMs);
  EXPECT_LE(hangs[0]->summary.duration_ns, 310 * kMs);

  // A measured pass with a stop inside: the stopped time is not counted.
  h.Begin();
  h.env.measured.emplace_back(h.state.load(), 700 * kMs);  // 200 ms running + 500 ms stopped
  h.Run(100 * kMs);
  h.env.Stop(500 * kMs);
  h.Run(100 * kMs);
  h.End();
  h.Run(30 * kMs);
  hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 3u);
  // The watchdog sees the stop from its late tick (to within a check interval).
  EXPECT_GE(hangs[0]->summary.stopped_ns, 490 * kMs);
  EXPECT_LE(hangs[0]->summary.stopped_ns, 500 * kMs);
  EXPECT_EQ(hangs[0]->summary.duration_ns, 700 * kMs - hangs[0]->summary.stopped_ns);
}

// A hang still running when the monitor stops is measured up to then, when timed.
TEST(StallMonitorTest, AHangStillRunningAtFinishIsMeasuredSoFar) {
  Harness h;
  h.Begin();
  h.env.running_state = h.state.load();
  h.env.running_since = h.env.mono - 3 * kMs;  // began 3 ms before the watchdog could see it
  h.Run(400 * kMs);
  h.monitor.Finish();
  const auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->summary.duration_ns, h.env.mono - h.env.running_since);
}

// The pass the watched thread was in when it exited is the shutdown pass; the one under way
// when the monitor was made, the start-up pass; the others run-phase.
TEST(StallMonitorTest, PhasesStartupRunAndShutdown) {
  Harness h(Options(), 8, /*initial_state=*/1);  // a pass is under way: before the first wait
  std::atomic<uint64_t> shutdown{0};
  h.monitor.set_shutdown_pass(&shutdown);
  h.Run(200 * kMs);
  h.End();
  h.Run(30 * kMs);
  h.Pass(200 * kMs);
  h.Begin();
  h.Run(200 * kMs);
  shutdown.store(h.state.load());  // exit() on the watched thread, inside this pass
  h.End();
  h.Run(30 * kMs);
  const auto hangs = Hangs(h.ring);  // newest first
  ASSERT_EQ(hangs.size(), 3u);
  EXPECT_EQ(hangs[2]->summary.phase, HangPhase::kStartup);
  EXPECT_EQ(hangs[1]->summary.phase, HangPhase::kRun);
  EXPECT_EQ(hangs[0]->summary.phase, HangPhase::kShutdown);
}

TEST(StallMonitorTest, ShortPassesAreNotSampled) {
  Harness h;
  for (int i = 0; i < 100; ++i) h.Pass(30 * kMs);
  EXPECT_EQ(h.sampler.captures, 0);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_EQ(h.stats.passes_seen.load(), 100u);
  EXPECT_EQ(h.stats.passes_timed.load(), 100u);
}

TEST(StallMonitorTest, SlowPassBelowThresholdIsSampledThenDropped) {
  Harness h;
  h.Pass(80 * kMs);
  EXPECT_GT(h.sampler.captures, 0);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_EQ(h.listener.opened, 0);
  EXPECT_EQ(h.stats.early_samples_dropped.load(), static_cast<uint64_t>(h.sampler.captures));
  EXPECT_EQ(h.stats.hangs.load(), 0u);
}

TEST(StallMonitorTest, HangKeepsEarlySamplesAndMeasuresDuration) {
  Harness h;
  h.Pass(400 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  EXPECT_EQ(h.listener.opened, 1);
  const HangSummary& s = h.listener.last_summary;
  // Each boundary is placed halfway between two looks 10 ms apart: off by at most 5 ms each.
  EXPECT_GE(s.duration_ns, 395 * kMs);
  EXPECT_LE(s.duration_ns, 405 * kMs);
  // The watchdog first sees the pass at the tick after BeginWork() (10 ms in), so samples fall
  // at effective 50, 60, ..., 390 ms: 35, early ones included.
  EXPECT_EQ(s.samples, 35u);
  const auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->timeline()[0].t_ms, 50u);
  EXPECT_EQ(hangs[0]->stacks().size(), 1u);
  EXPECT_EQ(hangs[0]->stacks().entry(0).count, s.samples);
  EXPECT_TRUE(s.cpu_known);
  EXPECT_EQ(
      HangData::Classify(s.cpu_ns, s.duration_ns, s.cpu_known, s.running_samples, s.state_samples),
      HangClass::kBusy);
  // The first sample's CPU delta covers the pass from its first sighting (estimated 5 ms
  // into it) to the sample at 50 ms; every later one covers one sample interval (busy).
  EXPECT_EQ(hangs[0]->timeline()[0].cpu_us, 45'000u);
  EXPECT_EQ(hangs[0]->timeline()[1].cpu_us, 10'000u);
}

TEST(StallMonitorTest, BlockedHangIsClassifiedBlocked) {
  Harness h;
  h.env.cpu_rate = 0.05;
  h.Pass(300 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  const HangSummary& s = h.listener.last_summary;
  EXPECT_EQ(
      HangData::Classify(s.cpu_ns, s.duration_ns, s.cpu_known, s.running_samples, s.state_samples),
      HangClass::kBlocked);
  EXPECT_EQ(s.running_samples, 0u);
}

TEST(StallMonitorTest, PhasesGiveTwoStacksInOrder) {
  Harness h;
  h.Begin();
  h.sampler.stack = {0xa0, 0x2000, 0x3000};
  h.Run(200 * kMs);
  h.sampler.stack = {0xb0, 0x2004, 0x3000};
  h.Run(150 * kMs);
  h.End();
  h.Run(30 * kMs);
  const auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 1u);
  const HangData& hang = *hangs[0];
  ASSERT_EQ(hang.stacks().size(), 2u);
  // Seen from 10 ms in: A sampled at effective 50..190 ms (15), B at 200..340 ms (15).
  EXPECT_EQ(hang.stacks().entry(0).count, 15u);
  EXPECT_EQ(hang.stacks().entry(1).count, 15u);
  EXPECT_LT(hang.stacks().entry(0).last_seen_ms, hang.stacks().entry(1).first_seen_ms);
  int last = 0;
  for (size_t i = 0; i < hang.timeline_size(); ++i) {
    EXPECT_GE(hang.timeline()[i].stack, last) << "A before B on the timeline";
    last = hang.timeline()[i].stack;
  }
}

// A runtime's frames (runtime_frames.h) replace the native ones after each capture: the Python
// leaf counts by its function, not its instruction (one stack though the instruction moves),
// and its frames keep the Python tag.
class FakePythonFrames final : public RuntimeFrames {
 public:
  void Watch(const unwind::ThreadInfo&) override {}
  void set_note(std::function<void(const std::string&)>) override {}
  void BeforeCapture() override { ++before; }
  size_t Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) override {
    ++merged;
    // busy() at instruction 0, 1, 2, ... called by main() at instruction 7; then the natives
    // outside the eval loop (the last one).
    uintptr_t* f = buf->frame_storage();
    const uintptr_t outer = n > 0 ? f[n - 1] : 0;
    f[0] = RuntimeFrameWord(0x7000, merged % 3);
    f[1] = RuntimeFrameWord(0x8000, 7);
    f[2] = outer;
    tags[0] = tags[1] = kPythonFrameTag;
    tags[2] = static_cast<uint8_t>(FrameMethod::kFramePointer);
    buf->num_frames = 3;
    return 3;
  }
  const RuntimeNames* names() const override { return nullptr; }
  int before = 0;
  int merged = 0;
};

TEST(StallMonitorTest, RuntimeFramesAreMergedAndAPythonLeafCountsByItsFunction) {
  Harness h;
  FakePythonFrames python;
  h.monitor.set_runtime_frames(&python);
  h.sampler.stack = {0xa0, 0x2000, 0x3000};
  h.Pass(200 * kMs);
  const auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), 1u);
  const HangData& hang = *hangs[0];
  EXPECT_GT(python.merged, 3);
  EXPECT_EQ(python.before, python.merged);
  ASSERT_EQ(hang.stacks().size(), 1u) << "one stack: the leaf's instruction is not its key";
  EXPECT_EQ(hang.stacks().entry(0).count, static_cast<uint32_t>(python.merged));
  ASSERT_EQ(hang.stacks().entry(0).num_frames, 3u);
  EXPECT_EQ(hang.stacks().tags(0)[0], kPythonFrameTag);
  EXPECT_EQ(hang.stacks().tags(0)[1], kPythonFrameTag);
  EXPECT_EQ(hang.stacks().frames(0)[1], RuntimeFrameWord(0x8000, 7));
  EXPECT_EQ(hang.stacks().frames(0)[2], 0x3000u);
}

TEST(StallMonitorTest, StopWhileIdleIsNotAHang) {
  Harness h;
  h.Run(100 * kMs);
  h.env.Stop(2'000 * kMs);
  h.Run(100 * kMs);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_GE(h.stats.stopped_ns.load(), 1'900 * kMs);
}

TEST(StallMonitorTest, StopDuringShortBusyPassIsNotAHang) {
  Harness h;
  h.Begin();
  h.Run(30 * kMs);
  h.env.Stop(2'000 * kMs);  // SIGSTOP ... SIGCONT
  h.Run(30 * kMs);
  h.End();
  h.Run(30 * kMs);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_EQ(h.stats.hangs.load(), 0u);
}

TEST(StallMonitorTest, StoppedTimeIsNotCountedInAHang) {
  Harness h;
  h.Begin();
  h.Run(120 * kMs);
  h.env.Stop(2'000 * kMs);
  h.Run(180 * kMs);
  h.End();
  h.Run(30 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  const HangSummary& s = h.listener.last_summary;
  EXPECT_GE(s.duration_ns, 300 * kMs);
  EXPECT_LE(s.duration_ns, 320 * kMs);
  EXPECT_GE(s.stopped_ns, 1'990 * kMs);
  EXPECT_EQ(
      HangData::Classify(s.cpu_ns, s.duration_ns, s.cpu_known, s.running_samples, s.state_samples),
      HangClass::kBusy);
}

TEST(StallMonitorTest, StarvedWatchdogWhileMainThreadRunsIsNotStoppedTime) {
  Harness h;
  h.Begin();
  h.Run(60 * kMs);
  h.env.Advance(500 * kMs);  // the watchdog did not run, the main thread did (busy)
  h.Run(20 * kMs);
  h.End();
  h.Run(30 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  EXPECT_GE(h.listener.last_summary.duration_ns, 580 * kMs);
  EXPECT_EQ(h.listener.last_summary.stopped_ns, 0u);
}

TEST(StallMonitorTest, OverloadedMachineIsNotStoppedTime) {
  // Both threads starved: the main thread got 10 % of a CPU, the watchdog waited on a run
  // queue throughout. Without the run-queue figure this would look like a stop.
  Harness h;
  h.env.cpu_rate = 0.0;  // and the main thread is blocked, so its CPU tells nothing
  h.Begin();
  h.Run(60 * kMs);
  h.env.Starve(500 * kMs, 0.1);
  h.Run(20 * kMs);
  h.End();
  h.Run(30 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  EXPECT_GE(h.listener.last_summary.duration_ns, 570 * kMs);
  EXPECT_EQ(h.listener.last_summary.stopped_ns, 0u);
  EXPECT_EQ(h.stats.stopped_ns.load(), 0u);
}

TEST(StallMonitorTest, DebuggerAttachedSuppressesUnlessAsked) {
  {
    Harness h;
    h.env.debugger = true;
    h.Pass(300 * kMs);
    EXPECT_EQ(h.listener.closed, 0);
    EXPECT_EQ(h.listener.discarded, 1);
    EXPECT_EQ(h.stats.hangs_suppressed.load(), 1u);
  }
  {
    MonitorOptions o = Options();
    o.report_under_debugger = true;
    Harness h(o);
    h.env.debugger = true;
    h.Pass(300 * kMs);
    EXPECT_EQ(h.listener.closed, 1);
  }
}

TEST(StallMonitorTest, FailedCapturesAreTimelineEntriesWithoutStack) {
  Harness h;
  h.sampler.status = unwind::CaptureStatus::kTimedOut;
  h.Pass(200 * kMs);
  ASSERT_EQ(h.listener.closed, 1);
  EXPECT_EQ(h.listener.last_summary.samples, 0u);
  EXPECT_GT(h.listener.last_summary.failed_samples, 0u);
  EXPECT_EQ(h.stats.failed_captures.load(), h.listener.last_summary.failed_samples);
  const auto hangs = Hangs(h.ring);
  EXPECT_EQ(hangs[0]->timeline()[0].stack, -1);
}

TEST(StallMonitorTest, FinishClosesAHangStillRunning) {
  Harness h;
  h.Begin();
  h.Run(300 * kMs);
  h.monitor.Finish();
  EXPECT_EQ(h.listener.closed, 1);
}

TEST(StallMonitorTest, APassLeftRunningByAnEndedThreadIsNoHang) {
  Harness h;
  h.sampler.status = unwind::CaptureStatus::kThreadExited;
  h.Begin();
  h.Run(300 * kMs);  // every sample fails: the thread is gone
  h.monitor.Finish(/*watched_thread_exited=*/true);
  EXPECT_EQ(h.listener.closed, 0);
  EXPECT_TRUE(Hangs(h.ring).empty());
}

TEST(StallMonitorTest, AHangSampledBeforeItsThreadEndedIsStillReported) {
  Harness h;
  h.Begin();
  h.Run(300 * kMs);  // sampled while the thread ran
  h.sampler.status = unwind::CaptureStatus::kThreadExited;
  h.Run(500 * kMs);  // then it ended inside the pass; the watchdog notices later
  h.monitor.Finish(/*watched_thread_exited=*/true);
  ASSERT_EQ(h.listener.closed, 1);
  EXPECT_GT(h.listener.last_summary.samples, 0u);
  EXPECT_EQ(h.listener.last_summary.failed_samples, 0u) << "no sample of an ended thread";
  // It ended when a sample first found the thread gone, not when the watchdog noticed.
  EXPECT_GE(h.listener.last_summary.duration_ns, 300 * kMs);
  EXPECT_LE(h.listener.last_summary.duration_ns, 320 * kMs);
  EXPECT_EQ(Hangs(h.ring).size(), 1u);
}

TEST(StallMonitorTest, AStopInsideAnIdleTickIsCounted) {
  Harness h;
  h.Run(100 * kMs);
  // The next tick reads the clock at its start and at its end: the stop lands between them.
  h.env.stop_at_read = 2;
  h.env.stop_at_read_ns = 2'000 * kMs;
  h.Run(100 * kMs);
  EXPECT_EQ(h.env.stop_at_read, 0) << "the stop happened";
  EXPECT_GE(h.stats.stopped_ns.load(), 1'900 * kMs);
}

TEST(StallMonitorTest, HistogramBuckets) {
  EXPECT_EQ(MonitorStats::BucketFor(0), 0);
  EXPECT_EQ(MonitorStats::BucketFor(999'999), 0);
  EXPECT_EQ(MonitorStats::BucketFor(1 * kMs), 1);
  EXPECT_EQ(MonitorStats::BucketFor(3 * kMs), 2);
  EXPECT_EQ(MonitorStats::BucketFor(100 * kMs), 7);  // [64, 128)
  EXPECT_EQ(MonitorStats::BucketFor(3'600'000 * kMs), Stats::kBuckets - 1);
  Harness h;
  h.Pass(400 * kMs);
  EXPECT_EQ(h.stats.pass_buckets[9].load(), 1u);  // [256, 512) ms
}

TEST(StallMonitorTest, RingOfNAfterNPlus5HangsHoldsTheNewestN) {
  constexpr size_t kN = 6;
  Harness h(Options(), kN);
  for (size_t i = 0; i < kN + 5; ++i) {
    h.sampler.stack = {0x100 + i, 0x2000};
    h.Pass(150 * kMs);
  }
  const auto hangs = Hangs(h.ring);
  ASSERT_EQ(hangs.size(), kN);
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(hangs[i]->summary.hang_id, kN + 4 - i);
    EXPECT_EQ(hangs[i]->stacks().frames(0)[0], 0x100 + kN + 4 - i);
  }
}

TEST(StallMonitorTest, MemoryIsFlatOver10000Hangs) {
  Harness h;
  auto pass = [&](int i) {
    h.sampler.stack = {static_cast<uintptr_t>(0x100 + i % 50), 0x2000, 0x3000};
    h.Pass(120 * kMs);
  };
  for (int i = 0; i < 100; ++i) pass(i);  // warm up
  const uint64_t before = g_allocations.load();
  for (int i = 0; i < 10'000; ++i) pass(i);
  const uint64_t after = g_allocations.load();
  EXPECT_EQ(h.stats.hangs.load(), 10'100u);
  EXPECT_EQ(after - before, 0u) << "the monitor allocated while building and keeping hangs";
}

}  // namespace
}  // namespace hangwatch::agent
