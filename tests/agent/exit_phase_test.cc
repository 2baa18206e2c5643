// The process exits in the middle of a pass, as the preload shim tells the agent (exit():
// StopAtProcessExit, _exit(): FlushBeforeExit; agent/core/exit_flush.h): real agent, real clock,
// passes timed. On the watched thread the pass ends there, is the last lag record's longest
// and, being a hang, is tagged "phase": "shutdown" with the duration the thread measured. From
// another thread, the watched thread's pass is cut short: counted as it stands in the last lag
// record, and its hang stays a run-phase hang.
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/core/exit_flush.h"
#include "hangwatch/hangwatch.h"
#include "report/report_decode.h"

namespace hangwatch {
namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void BusyUntil(uint64_t until_ns) {
  while (NowNs() < until_ns) {
  }
}

std::string TempPath(const char* name) {
  std::string p = "/tmp/hangwatch_" + std::string(name) + "_" + std::to_string(getpid()) + ".jsonl";
  unlink(p.c_str());
  return p;
}

struct Records {
  std::vector<HangRecord> hangs;
  std::vector<report::Lag> lags;
};

Records Read(const std::string& path) {
  Records out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    report::Record r;
    std::string error;
    EXPECT_TRUE(report::Decode(line, &r, &error)) << error << ": " << line;
    if (auto* h = std::get_if<HangRecord>(&r)) out.hangs.push_back(*h);
    if (auto* l = std::get_if<report::Lag>(&r)) out.lags.push_back(*l);
  }
  return out;
}

Config ExitConfig(const std::string& path) {
  Config c;
  c.threshold = std::chrono::milliseconds(100);
  c.log_hangs = false;
  c.time_every_pass = true;
  c.lag_interval = std::chrono::seconds(60);  // only the last interval is written
  c.json_path = path;
  return c;
}

// One shutdown pass of about 300 ms ended by `exit_call` on the watched thread.
template <typename ExitCall>
void ExpectShutdownPass(const char* name, ExitCall exit_call) {
  const std::string path = TempPath(name);
  ASSERT_TRUE(Start(ExitConfig(path)).ok());
  // The pass starts between these two reads: its length is at least `exiting - begun` and at
  // most `exited - before` (whole milliseconds, rounded down on both sides).
  const uint64_t before = NowNs();
  BeginWork();
  const uint64_t begun = NowNs();
  BusyUntil(begun + 300'000'000);
  const uint64_t exiting = NowNs();
  exit_call();
  const uint64_t exited = NowNs();
  Stop();
  const Records r = Read(path);
  ASSERT_EQ(r.hangs.size(), 1u);
  const HangRecord& h = r.hangs[0];
  EXPECT_EQ(h.phase, HangPhase::kShutdown);
  EXPECT_FALSE(h.fatal);
  // The pass's own measurement: from BeginWork() to the exit call, whatever the watchdog's
  // looks were.
  EXPECT_GE(h.duration_ms, (exiting - begun) / 1'000'000);
  EXPECT_LE(h.duration_ms, (exited - before) / 1'000'000 + 1);
  ASSERT_EQ(r.lags.size(), 1u);
  const LagFigures f = r.lags[0].passes.Figures();
  EXPECT_EQ(f.passes, 1u) << "the pass the exit ended is counted, once";
  EXPECT_GE(f.max_ms, 290.0);
  unlink(path.c_str());
}

TEST(ExitPhaseTest, ExitOnTheWatchedThreadEndsItsPassAsTheShutdownPass) {
  ExpectShutdownPass("exit_phase_exit", [] { agent::StopAtProcessExit(); });
}

TEST(ExitPhaseTest, UnderscoreExitOnTheWatchedThreadEndsItsPassAsTheShutdownPass) {
  // FlushBeforeExit() may give up waiting (50 ms) while the watchdog names the hang's frames
  // for the first time; Stop() then waits for it to finish.
  ExpectShutdownPass("exit_phase__exit", [] { (void)agent::FlushBeforeExit(); });
}

TEST(ExitPhaseTest, ExitFromAnotherThreadCountsTheWatchedPassAsItStands) {
  const std::string path = TempPath("exit_phase_other_thread");
  ASSERT_TRUE(Start(ExitConfig(path)).ok());
  const uint64_t begin = NowNs();
  BeginWork();
  const uint64_t begun = NowNs();  // the pass started between `begin` and here
  std::atomic<bool> stopped{false};
  std::thread exiting([&] {
    BusyUntil(begun + 300'000'000);
    agent::StopAtProcessExit();  // exit() called on another thread
    stopped.store(true);
  });
  while (!stopped.load()) {
  }
  const uint64_t after = NowNs();
  exiting.join();
  EndWork();
  const Records r = Read(path);
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.hangs[0].phase, HangPhase::kRun) << "cut short by another thread: may be a real hang";
  EXPECT_GE(r.hangs[0].duration_ms, 300u);
  EXPECT_LE(r.hangs[0].duration_ms, (after - begin) / 1'000'000 + 1);
  ASSERT_EQ(r.lags.size(), 1u) << "the running pass is the interval's only pass";
  const LagFigures f = r.lags[0].passes.Figures();
  EXPECT_EQ(f.passes, 1u);
  EXPECT_GE(f.max_ms, 290.0);
  unlink(path.c_str());
}

// Stop() alone (the embedder's, not an exit) leaves the pass under way to its thread: not
// counted, not a shutdown pass.
TEST(ExitPhaseTest, StopWithoutAnExitTagsNothing) {
  const std::string path = TempPath("exit_phase_stop");
  ASSERT_TRUE(Start(ExitConfig(path)).ok());
  const uint64_t begin = NowNs();
  BeginWork();
  BusyUntil(begin + 300'000'000);
  Stop();
  EndWork();
  const Records r = Read(path);
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.hangs[0].phase, HangPhase::kRun);
  EXPECT_TRUE(r.lags.empty()) << "no pass ended while the agent ran";
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch
