// Config::time_every_pass end to end: real passes of known lengths through BeginWork()/EndWork()
// and the real clock, read back through GetStats(), PassDurations(), the JSON Lines lag
// records and the spdlog summary line.
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/core/exit_flush.h"
#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"
#include "report/report_decode.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace hangwatch {
namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One pass of `ms` milliseconds on the CPU. Returns its length as this test measured it (a
// pass the scheduler stretched is longer, and the agent must see it so too).
uint64_t Pass(double ms) {
  const uint64_t start = NowNs();
  BeginWork();
  const uint64_t until = start + static_cast<uint64_t>(ms * 1e6);
  while (NowNs() < until) {
  }
  EndWork();
  return NowNs() - start;
}

std::string TempPath(const char* name) {
  std::string p = "/tmp/hangwatch_" + std::string(name) + "_" + std::to_string(getpid()) + ".jsonl";
  unlink(p.c_str());
  return p;
}

std::vector<report::Lag> LagRecords(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<report::Lag> out;
  while (std::getline(in, line)) {
    report::Record r;
    std::string error;
    EXPECT_TRUE(report::Decode(line, &r, &error)) << error << ": " << line;
    if (auto* lag = std::get_if<report::Lag>(&r)) out.push_back(*lag);
  }
  return out;
}

Config TimedConfig() {
  Config c;
  c.threshold = std::chrono::milliseconds(2000);  // no pass here is a hang
  c.log_hangs = false;
  c.time_every_pass = true;
  c.lag_interval = std::chrono::milliseconds(0);
  return c;
}

TEST(LagTest, KnownPassLengthsGiveTheirFigures) {
  Config config = TimedConfig();
  config.json_path = TempPath("lag_known");
  config.labels = {{"build", "17"}};
  const PassHistogram before = PassDurations();  // the other tests' passes
  ASSERT_TRUE(Start(config).ok());
  // What the test itself measured, in the same histogram layout.
  PassHistogram measured;
  for (int i = 0; i < 1900; ++i) measured.Add(Pass(1));
  for (int i = 0; i < 80; ++i) measured.Add(Pass(20));
  for (int i = 0; i < 20; ++i) measured.Add(Pass(40));
  const Stats stats = GetStats();
  const PassHistogram seen = PassDurations().Since(before);
  Stop();

  const LagFigures want = measured.Figures();
  for (const LagFigures& f : {stats.lag, seen.Figures()}) {
    EXPECT_EQ(f.passes, 2000u);
    // Exactly the 100 passes of 20 and 40 ms are over 16 ms, 20 over 33 ms, as measured.
    EXPECT_EQ(f.slow_passes[0], want.slow_passes[0]);
    EXPECT_EQ(f.slow_passes[1], want.slow_passes[1]);
    EXPECT_EQ(f.slow_passes[2], want.slow_passes[2]);
    EXPECT_NEAR(f.p50_ms, want.p50_ms, want.p50_ms * 0.02);
    EXPECT_NEAR(f.p95_ms, want.p95_ms, want.p95_ms * 0.02);
    EXPECT_NEAR(f.max_ms, want.max_ms, want.max_ms * 0.02);
    EXPECT_NEAR(f.busy_ms, want.busy_ms, want.busy_ms * 0.01);
  }
  // And never under the nominal lengths: a pass lasts at least as long as its busy loop. (No
  // upper bound: how far a loaded machine stretches passes is the scheduler's business; the
  // figures above are checked against what the test measured for that reason.)
  EXPECT_GE(stats.lag.p50_ms, 0.99);
  EXPECT_GE(stats.lag.p95_ms, 19.8);
  EXPECT_GE(stats.lag.max_ms, 39.6);

  // lag_interval 0: one record, at Stop(), with the same figures and the labels.
  const std::vector<report::Lag> lags = LagRecords(config.json_path);
  ASSERT_EQ(lags.size(), 1u);
  EXPECT_EQ(lags[0].pid, getpid());
  EXPECT_EQ(lags[0].labels.at("build"), "17");
  EXPECT_FALSE(lags[0].host.empty());
  EXPECT_EQ(lags[0].passes.Figures().passes, 2000u);
  EXPECT_EQ(lags[0].passes.Figures().slow_passes[0], want.slow_passes[0]);
  EXPECT_LE(lags[0].start_unix_ms, lags[0].end_unix_ms);
  unlink(config.json_path.c_str());
}

TEST(LagTest, IntervalsCoverOnlyTheirOwnPassesAndAddUp) {
  Config config = TimedConfig();
  config.json_path = TempPath("lag_intervals");
  config.lag_interval = std::chrono::milliseconds(100);
  ASSERT_TRUE(Start(config).ok());
  uint64_t slow = 0;
  for (int i = 0; i < 60; ++i) slow += Pass(i % 3 == 0 ? 20 : 2) > 16'000'000;
  Stop();
  const std::vector<report::Lag> lags = LagRecords(config.json_path);
  ASSERT_GE(lags.size(), 2u) << "60 passes over >= 480 ms, a record every 100 ms";
  PassHistogram all;
  for (size_t i = 0; i < lags.size(); ++i) {
    all.Merge(lags[i].passes);
    EXPECT_GT(lags[i].passes.passes(), 0u) << "an interval without passes writes no record";
    if (i > 0) {
      EXPECT_GE(lags[i].start_unix_ms, lags[i - 1].end_unix_ms);
    }
  }
  EXPECT_EQ(all.passes(), 60u);
  EXPECT_EQ(all.slow_passes(0), slow);
  unlink(config.json_path.c_str());
}

// One pass of `ms` on the CPU whose work had waited `queued_ms` before it (an adapter's
// SetPassSource with the queued time, as GLib's does for a late timer).
uint64_t QueuedPass(double ms, double queued_ms) {
  const uint64_t start = NowNs();
  BeginWork();
  SetPassSource("late-timer", nullptr, static_cast<int64_t>(queued_ms * 1e6));
  const uint64_t until = start + static_cast<uint64_t>(ms * 1e6);
  while (NowNs() < until) {
  }
  EndWork();
  return NowNs() - start;
}

// Queued + running: a pass whose work had waited counts in the record's "delay" histogram at its
// time plus the wait; every other pass at its own time; the running-only histogram is as before.
TEST(LagTest, QueuedPassesCountTheirWaitInTheDelayHistogramOnly) {
  Config config = TimedConfig();
  config.json_path = TempPath("lag_queued");
  ASSERT_TRUE(Start(config).ok());
  // 25 passes with a wait: fewer than the thread's ring holds (kDelayMoveSlots), so none is lost
  // however seldom the watchdog looks (every 400 ms here).
  PassHistogram running, delay;
  for (int i = 0; i < 100; ++i) {
    const uint64_t ns = Pass(1);
    running.Add(ns);
    delay.Add(ns);
  }
  for (int i = 0; i < 20; ++i) {
    const uint64_t ns = QueuedPass(1, 30);
    running.Add(ns);
    delay.Add(ns + 30'000'000);
  }
  for (int i = 0; i < 5; ++i) {
    const uint64_t ns = QueuedPass(20, 100);
    running.Add(ns);
    delay.Add(ns + 100'000'000);
  }
  Stop();
  const std::vector<report::Lag> lags = LagRecords(config.json_path);
  ASSERT_EQ(lags.size(), 1u);
  const report::Lag& l = lags[0];
  EXPECT_EQ(l.queued_passes, 25u);
  EXPECT_EQ(l.queued_passes_lost, 0u);
  const LagFigures r = l.passes.Figures();
  const LagFigures d = l.delay.Figures();
  EXPECT_EQ(r.passes, 125u);
  EXPECT_EQ(d.passes, 125u);
  // The wait is not in the running histogram: its longest pass is the longest the test timed
  // (about 20 ms, longer only if the scheduler stretched one, and then in both alike).
  EXPECT_NEAR(r.max_ms, running.Figures().max_ms, running.Figures().max_ms * 0.02);
  // The delay is measured from when the work became due (SetPassSource's clock read minus the
  // queued time) to the pass's end: at least what the test added, a little more for the time
  // between BeginWork() and SetPassSource().
  EXPECT_GE(d.max_ms, 119.5);
  EXPECT_NEAR(d.max_ms, delay.Figures().max_ms, delay.Figures().max_ms * 0.02);
  EXPECT_NEAR(d.p95_ms, delay.Figures().p95_ms, delay.Figures().p95_ms * 0.02);
  EXPECT_NEAR(d.p50_ms, r.p50_ms, r.p50_ms * 0.05);  // most passes had no wait
  unlink(config.json_path.c_str());
}

TEST(LagTest, APassUnderWayAtStartIsTimedFromStart) {
  BeginWork();
  const uint64_t before = NowNs();
  ASSERT_TRUE(Start(TimedConfig()).ok());
  const uint64_t started = NowNs();
  while (NowNs() < started + 5'000'000) {
  }
  EndWork();
  const uint64_t after = NowNs();
  const LagFigures f = GetStats().lag;
  Stop();
  EXPECT_EQ(f.passes, 1u);
  EXPECT_GE(f.max_ms, 4.9);
  EXPECT_LE(f.max_ms, static_cast<double>(after - before) / 1e6 * 1.01);
}

TEST(LagTest, AnExitFlushWritesTheLastIntervalBeforeItAnswers) {
  // What the preload shim's _exit() does: the interval under way (60 s long) is written by the
  // watchdog, and is in the file when FlushBeforeExit() returns, with no Stop().
  EXPECT_FALSE(agent::FlushBeforeExit()) << "no agent runs: nobody to ask";
  Config config = TimedConfig();
  config.json_path = TempPath("lag_exit_flush");
  config.lag_interval = std::chrono::seconds(60);
  ASSERT_TRUE(Start(config).ok());
  for (int i = 0; i < 5; ++i) Pass(1);
  EXPECT_TRUE(LagRecords(config.json_path).empty()) << "the interval has not ended";
  EXPECT_TRUE(agent::FlushBeforeExit());
  const std::vector<report::Lag> lags = LagRecords(config.json_path);
  ASSERT_EQ(lags.size(), 1u);
  EXPECT_EQ(lags[0].passes.passes(), 5u);
  Stop();
  EXPECT_EQ(LagRecords(config.json_path).size(), 1u) << "Stop() does not write it twice";
  EXPECT_FALSE(agent::FlushBeforeExit()) << "stopped: nobody to ask";
  unlink(config.json_path.c_str());
}

TEST(LagTest, OffByDefault) {
  Config config;
  config.threshold = std::chrono::milliseconds(2000);
  config.log_hangs = false;
  config.json_path = TempPath("lag_off");
  const uint64_t passes_before = PassDurations().passes();
  ASSERT_TRUE(Start(config).ok());
  for (int i = 0; i < 10; ++i) Pass(1);
  const Stats stats = GetStats();
  Stop();
  EXPECT_EQ(stats.passes_seen, 10u);
  EXPECT_EQ(stats.lag.passes, 0u);
  EXPECT_EQ(PassDurations().passes(), passes_before) << "timing is off: nothing is counted";
  EXPECT_TRUE(LagRecords(config.json_path).empty());
  unlink(config.json_path.c_str());
}

// The timed mode is a bit of the run-loop state word: it follows each session, whatever the
// one before was, and passes are counted in both modes.
TEST(LagTest, TimedUntimedTimedSessionsEachCountTheirOwnWay) {
  Config untimed;
  untimed.threshold = std::chrono::milliseconds(2000);
  untimed.log_hangs = false;
  for (int round = 0; round < 2; ++round) {
    uint64_t before = PassDurations().passes();
    ASSERT_TRUE(Start(TimedConfig()).ok());
    for (int i = 0; i < 5; ++i) Pass(0.1);
    Stop();
    EXPECT_EQ(PassDurations().passes(), before + 5) << "timed, round " << round;

    before = PassDurations().passes();
    ASSERT_TRUE(Start(untimed).ok());
    BeginWork();  // a pass under way when the mode changes back
    EndWork();
    for (int i = 0; i < 5; ++i) Pass(0.1);
    const Stats stats = GetStats();
    Stop();
    EXPECT_EQ(stats.passes_seen, 6u) << "untimed, round " << round;
    EXPECT_EQ(PassDurations().passes(), before) << "untimed, round " << round;
  }
}

TEST(LagTest, SpdlogGetsOneSummaryLinePerInterval) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "lag_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  Config config = TimedConfig();
  config.log_hangs = true;
  config.logger = logger;
  ASSERT_TRUE(Start(config).ok());
  // Slow passes as this test measured them: on a loaded machine the scheduler may stretch a
  // 1 ms pass past 16 ms too, and the line must then count it.
  PassHistogram measured;
  for (int i = 0; i < 5; ++i) measured.Add(Pass(1));
  measured.Add(Pass(20));
  Stop();
  const std::string text = out.str();
  EXPECT_NE(text.find("hangwatch: lag over "), std::string::npos) << text;
  EXPECT_NE(text.find(": 6 passes (busy "), std::string::npos) << text;
  ASSERT_GE(measured.Figures().slow_passes[0], 1u) << "the 20 ms pass";
  const std::string slow =
      "; slow: " + std::to_string(measured.Figures().slow_passes[0]) + " > 16 ms";
  EXPECT_NE(text.find(slow), std::string::npos) << text;
}

TEST(LagTest, LabelsComeFromTheEnvironmentAndConfig) {
  setenv("HANGWATCH_LABELS", "region=eu, build=16 ,app=demo", 1);
  Config config = TimedConfig();
  config.json_path = TempPath("lag_labels");
  config.labels = {{"build", "17"}};
  ASSERT_TRUE(Start(config).ok());
  Pass(1);
  Stop();
  unsetenv("HANGWATCH_LABELS");
  const std::vector<report::Lag> lags = LagRecords(config.json_path);
  ASSERT_EQ(lags.size(), 1u);
  const std::map<std::string, std::string> want = {
      {"app", "demo"}, {"build", "17"}, {"region", "eu"}};
  EXPECT_EQ(lags[0].labels, want);
  unlink(config.json_path.c_str());
}

}  // namespace
}  // namespace hangwatch
