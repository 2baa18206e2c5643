// End to end: the public API, the real watchdog thread and the real SignalSampler, with stalls
// of known shape on the main thread. Every wait is on an agent event (a report, a counter).
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/core/agent_internal.h"
#include "agent/core/stall_monitor.h"
#include "agent/core/watchdog_env.h"
#include "hangwatch/hangwatch.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::MonoNs;
using testing::StackMentions;
using testing::TestConfig;
using testing::ThreadCpuNs;
using testing::WaitUntil;

volatile uint64_t g_work;

HW_TEST_KEEP_FRAME void SpinUntilFlag(const std::atomic<bool>* flag) {
  while (!flag->load(std::memory_order_relaxed)) g_work = g_work + 1;
}
HW_TEST_KEEP_FRAME void PhaseA(const std::atomic<bool>* flag) {
  while (!flag->load(std::memory_order_relaxed)) g_work = g_work + 1;
}
HW_TEST_KEEP_FRAME void PhaseB(const std::atomic<bool>* flag) {
  while (!flag->load(std::memory_order_relaxed)) g_work = g_work * 3 + 7;
}
HW_TEST_KEEP_FRAME void SpinFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) g_work = g_work + 1;
}
// Busy until `done` (no calls: every sample's innermost frame is this function itself).
HW_TEST_KEEP_FRAME void ExpensivePart(const std::atomic<bool>* done) {
  while (!done->load(std::memory_order_relaxed)) g_work = g_work + 3;
}
HW_TEST_KEEP_FRAME void CheapTail() { std::this_thread::sleep_for(40ms); }

uint64_t Samples() { return GetStats().samples; }

class StallE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Start(TestConfig()).ok()); }
  void TearDown() override { Stop(); }
};

// Returns once the watchdog has finished every tick that could still report an earlier pass:
// it has seen a new pass start (and then end).
void SyncWithWatchdog() {
  const uint64_t timed = GetStats().passes_timed;
  BeginWork();
  ASSERT_TRUE(WaitUntil([] { return agent::WatchdogSeesCurrentPass(); }));
  EndWork();
  ASSERT_TRUE(WaitUntil([&] { return GetStats().passes_timed > timed; }));
}

TEST_F(StallE2eTest, StallsAtOrOverThresholdReportedOnceShortOnesNever) {
  HangCollector collector;
  // Threshold 100 ms. What counts is how long each pass really lasted (a loaded machine can
  // stretch a 50 ms sleep): under 0.8x the threshold never a hang; at or over the threshold
  // plus the measurement error (one sample + one check interval) exactly one hang.
  struct Reported {
    uint64_t true_ms;
    HangRecord hang;
  };
  std::vector<Reported> reported;
  int never_cases = 0;
  for (const int ms : {50, 150, 400, 1500}) {
    const size_t before = collector.size();
    const uint64_t t0 = MonoNs();
    {
      WorkScope pass;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    const uint64_t true_ms = (MonoNs() - t0) / 1'000'000;
    if (true_ms >= 120) {
      ASSERT_TRUE(collector.WaitFor(before + 1)) << true_ms << " ms stall not reported";
    }
    SyncWithWatchdog();
    if (true_ms < 80) {
      ++never_cases;
      EXPECT_EQ(collector.size(), before) << true_ms << " ms stall reported";
    } else if (true_ms >= 120) {
      ASSERT_EQ(collector.size(), before + 1) << true_ms << " ms stall: exactly once";
      reported.push_back({true_ms, collector.hangs().back()});
    }
  }
  EXPECT_GE(reported.size(), 3u);
  EXPECT_EQ(GetStats().hangs, collector.size());
  // Within one sample interval plus one check interval (10 + 10 ms).
  for (const Reported& r : reported) {
    const int64_t diff = static_cast<int64_t>(r.hang.duration_ms) - static_cast<int64_t>(r.true_ms);
    EXPECT_LE(std::abs(diff), 20) << "stall of " << r.true_ms << " ms reported as "
                                  << r.hang.duration_ms << " ms";
    EXPECT_GT(r.hang.samples, 0u);
    EXPECT_EQ(r.hang.hang_class, HangClass::kBlocked) << "a sleep";
  }
  if (never_cases == 0) GTEST_LOG_(WARNING) << "the 50 ms stall ran long: machine overloaded";
}

TEST_F(StallE2eTest, BusyStallIsBusyWithHighCpu) {
  HangCollector collector;
  const uint64_t t0 = MonoNs(), c0 = ThreadCpuNs();
  {
    WorkScope pass;
    SpinFor(300ms);
  }
  const uint64_t t1 = MonoNs(), c1 = ThreadCpuNs();
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(h.hang_class, HangClass::kBusy);
  // What the thread really got: on a loaded machine a busy thread may get less than a core.
  const double truth = 100.0 * static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
  if (truth >= 90) {
    EXPECT_GE(h.cpu_percent, 80u);
  } else {
    EXPECT_NEAR(h.cpu_percent, truth, 15) << "the machine is loaded; true CPU " << truth << " %";
  }
  EXPECT_GT(h.cpu_ms, 0u);
}

TEST_F(StallE2eTest, MutexWaitIsBlockedWithLowCpu) {
  HangCollector collector;
  std::mutex mu;
  std::atomic<bool> held{false};
  std::atomic<uint64_t> before_release{0};
  const uint64_t base = Samples();
  std::thread holder([&] {
    std::lock_guard<std::mutex> lock(mu);
    held = true;
    // Release once the watchdog has sampled the waiting main thread 20 times (~250 ms).
    WaitUntil([&] { return Samples() >= base + 20; });
    before_release = Samples() - base;
  });
  WaitUntil([&] { return held.load(); });
  {
    WorkScope pass;
    std::lock_guard<std::mutex> lock(mu);
  }
  holder.join();
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_LE(h.cpu_percent, 20u);
  // Every sample taken while the lock was held finds the thread asleep. Later ones may find it
  // woken by the release and waiting for a CPU (state R) on a busy machine.
  ASSERT_GE(h.timeline.size(), 1u);
  for (size_t i = 0; i < h.timeline.size() && i < before_release.load(); ++i) {
    const auto& t = h.timeline[i];
    if (t.stack >= 0) {
      EXPECT_NE(t.state, 'R') << "at " << t.t_ms << " ms";
    }
  }
}

TEST_F(StallE2eTest, OneFunctionGivesOneStackCountingEverySample) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  std::atomic<bool> flag{false};
  const uint64_t base = Samples();
  std::thread stopper([&] {
    WaitUntil([&] { return Samples() >= base + 15; });
    flag = true;
  });
  {
    WorkScope pass;
    SpinUntilFlag(&flag);
  }
  stopper.join();
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  ASSERT_GE(h.samples, 15u);
  ASSERT_EQ(h.stacks.size(), 1u) << "one function, one stack";
  EXPECT_EQ(h.stacks[0].count, h.samples);
  EXPECT_TRUE(StackMentions(h.stacks[0], "SpinUntilFlag", 1)) << h.stacks[0].frames[0].symbol;
  EXPECT_EQ(h.dominant_stack, 0);
  EXPECT_EQ(h.fingerprint.size(), 16u);
}

TEST_F(StallE2eTest, PhaseAThenPhaseBGivesBothStacksInProportionAndOrder) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  std::atomic<bool> end_a{false}, end_b{false};
  const uint64_t base = Samples();
  // The driver ends each phase after a number of samples, and notes how many there really
  // were when it did (on a loaded machine it may see the counter late).
  uint64_t at_a = 0, at_b = 0;
  std::thread driver([&] {
    WaitUntil([&] { return Samples() >= base + 12; });  // A: 12 samples
    at_a = Samples();
    end_a = true;
    WaitUntil([&] { return Samples() >= at_a + 6; });  // B: 6 samples
    at_b = Samples();
    end_b = true;
  });
  {
    WorkScope pass;
    PhaseA(&end_a);
    PhaseB(&end_b);
  }
  driver.join();
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.stacks.size(), 2u);
  const Stack& a = h.stacks[0];  // sorted by count: A first
  const Stack& b = h.stacks[1];
  EXPECT_TRUE(StackMentions(a, "PhaseA", 1)) << a.frames[0].symbol;
  EXPECT_TRUE(StackMentions(b, "PhaseB", 1)) << b.frames[0].symbol;
  // In proportion: what each phase really lasted, give or take the sample taken while the
  // driver was flipping the flag.
  EXPECT_NEAR(a.count, at_a - base, 1);
  EXPECT_NEAR(b.count, at_b - at_a, 1);
  EXPECT_GE(a.count + 1, 12u);
  EXPECT_GE(b.count + 1, 6u);
  EXPECT_LT(a.last_seen_ms, b.first_seen_ms);
  bool seen_b = false;
  for (const auto& t : h.timeline) {
    if (t.stack == b.id) seen_b = true;
    if (t.stack == a.id) {
      EXPECT_FALSE(seen_b) << "A after B on the timeline at " << t.t_ms;
    }
  }
  EXPECT_TRUE(seen_b);
}

TEST_F(StallE2eTest, ExpensivePartThatEndedBeforeTheThresholdIsNamed) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  std::atomic<bool> done{false};
  const uint64_t base = Samples();
  std::thread timer([&] {
    // The expensive part lasts 80 ms, and at least until the watchdog has sampled it once
    // (so that a starved watchdog on a loaded machine cannot make the test vacuous).
    const auto t80 = std::chrono::steady_clock::now() + 80ms;
    WaitUntil([&] { return std::chrono::steady_clock::now() >= t80 && Samples() > base; });
    done = true;
  });
  uint64_t part_ended_ms = 0;  // since the pass began; the part outlasts 80 ms on a slow machine
  {
    const uint64_t pass_start = MonoNs();
    WorkScope pass;
    ExpensivePart(&done);  // 0..80 ms
    // +1: the record rounds to whole milliseconds.
    part_ended_ms = (MonoNs() - pass_start) / 1'000'000 + 1;
    CheapTail();  // 80..120 ms; the hang is declared at 100 ms
  }
  timer.join();
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  bool named = false;
  std::set<int> part_stacks;
  for (const Stack& s : h.stacks) {
    // Innermost frame only: outer frames found by walking frame pointers through libc (which
    // has none) can be stale words of the stack, and must not count as naming it.
    if (StackMentions(s, "ExpensivePart", 1)) {
      named = true;
      part_stacks.insert(s.id);
      // The pass's start is placed halfway between two looks of the watchdog (10 ms apart,
      // more when it waited for a CPU), so sample times are exact to half that gap.
      EXPECT_LE(s.last_seen_ms, part_ended_ms + 10) << "seen after the part ended";
    }
  }
  // Whatever the times: no sample saw the part after one had seen the tail.
  bool tail_seen = false;
  for (const auto& t : h.timeline) {
    if (t.stack < 0) continue;
    if (part_stacks.count(t.stack) > 0) {
      EXPECT_FALSE(tail_seen) << "the part seen again at " << t.t_ms << " ms, after the tail";
    } else {
      tail_seen = true;
    }
  }
  EXPECT_TRUE(named) << "the early samples were dropped";
  if (HasFailure()) {
    for (const Stack& s : h.stacks) {
      std::string line;
      for (size_t i = 0; i < s.frames.size() && i < 4; ++i) line += s.frames[i].symbol + " | ";
      ADD_FAILURE() << "stack " << s.id << " x" << s.count << " @" << s.first_seen_ms << ".."
                    << s.last_seen_ms << ": " << line;
    }
    for (const auto& t : h.timeline) {
      ADD_FAILURE() << "t=" << t.t_ms << " stack " << t.stack << " state " << t.state;
    }
  }
}

TEST_F(StallE2eTest, IdleRunLoopIsNeverAHang) {
  const uint64_t t0 = MonoNs();
  std::this_thread::sleep_for(600ms);  // idle: no pass running
  ASSERT_GE(MonoNs() - t0, 600'000'000u);
  Stop();
  EXPECT_EQ(GetStats().hangs, 0u);
  EXPECT_EQ(GetStats().samples, 0u) << "nothing is sampled while idle";
}

TEST_F(StallE2eTest, RecentHangsNewestFirstAndStatsHistogram) {
  HangCollector collector;
  for (int i = 0; i < 2; ++i) {
    WorkScope pass;
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 150 * i));
  }
  ASSERT_TRUE(collector.WaitFor(2));
  const auto recent = RecentHangs();
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_GT(recent[0].hang_id, recent[1].hang_id);
  EXPECT_GT(recent[0].duration_ms, recent[1].duration_ms);
  const Stats s = GetStats();
  EXPECT_EQ(s.passes_seen, 2u);
  uint64_t in_buckets = 0;
  for (uint64_t b : s.pass_duration_ms_buckets) in_buckets += b;
  EXPECT_EQ(in_buckets, s.passes_timed);
  // Each hang's pass is in the histogram bucket of its duration (the same estimate).
  for (const HangRecord& h : recent) {
    EXPECT_GE(s.pass_duration_ms_buckets[agent::MonitorStats::BucketFor(h.duration_ms * 1'000'000)],
              1u)
        << h.duration_ms << " ms";
  }

  // On demand, to a logger: oldest first, one WARN line per hang.
  std::ostringstream out;
  spdlog::logger logger("dump", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger.set_pattern("%l|%v");
  DumpRecentHangs(&logger);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<std::string> warns;
  while (std::getline(lines, line)) {
    if (line.rfind("warning|", 0) == 0) warns.push_back(line);
  }
  ASSERT_EQ(warns.size(), 2u) << out.str();
  EXPECT_NE(warns[0].find(std::to_string(recent[1].duration_ms) + " ms"), std::string::npos)
      << warns[0];
  EXPECT_NE(warns[1].find(recent[0].fingerprint), std::string::npos) << warns[1];
}

TEST(ProcFilesTest, SchedStateAndTracerPid) {
  EXPECT_EQ(agent::ReadSchedState(static_cast<pid_t>(syscall(SYS_gettid))), 'R');
  EXPECT_EQ(agent::ReadSchedState(999'999'999), '?');
  // Not run under a debugger by ctest; a debugger attached would make this 0 != tracer.
  if (getenv("HANGWATCH_TEST_UNDER_DEBUGGER") == nullptr) {
    EXPECT_EQ(agent::ReadTracerPid(), 0);
  }
}

}  // namespace
}  // namespace hangwatch
