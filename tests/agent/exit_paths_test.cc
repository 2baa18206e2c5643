// The ways a watched program leaves or takes back what the agent relies on, and what the agent
// must do so that the program still ends and lives as it would without it:
//   - _exit() asks the watchdog for its last records: answered at once, whatever the threshold
//     (the watchdog's sleep is woken, not waited out);
//   - the watched thread ends with pthread_exit(): the watchdog notices and gets out of the way,
//     so a process left with the watchdog alone ends;
//   - the application resets the sampling signal to SIG_DFL, or installs its own handler: no
//     signal is sent any more (it would kill the process, or reach a handler that never asked
//     for it), and Stop() leaves the application's disposition in place.
// Each child is forked and bounded by WaitForChild(): a child that never ends is a failure, not
// a hung test.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/core/agent_internal.h"
#include "agent/core/exit_flush.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::WaitForChild;

// A threshold whose check interval (a fifth of it) and lag interval are far longer than any
// bound below: an exit that waited for the watchdog's next tick would blow the bound.
Config LongThresholdConfig() {
  Config c;
  c.threshold = 600s;
  c.log_hangs = false;
  return c;
}

void Spin(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

std::string TempPath(const char* name) {
  return "/tmp/hangwatch_exit_paths_" + std::string(name) + "_" + std::to_string(getpid());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ExitPathsTest, ExitFlushIsAnsweredAtOnceAtALongThreshold) {
  const std::string report = TempPath("flush");
  unlink(report.c_str());
  const pid_t pid = fork();
  if (pid == 0) {
    Config c = LongThresholdConfig();
    c.json_path = report;
    c.time_every_pass = true;
    c.lag_interval = 3600s;
    if (!Start(c).ok()) _exit(10);
    for (int i = 0; i < 3; ++i) {
      BeginWork();
      EndWork();
    }
    // What the preload shim's _exit() does.
    _exit(agent::FlushBeforeExit() ? 0 : 11);
  }
  ASSERT_GT(pid, 0);
  // The watchdog's next tick is two minutes away, its next lag record an hour away.
  EXPECT_EQ(WaitForChild(pid, 10s), 0) << "the exit waited for the watchdog's next tick";
  EXPECT_NE(Slurp(report).find("\"type\":\"lag\""), std::string::npos)
      << "the last interval was written before the exit";
  unlink(report.c_str());
}

TEST(ExitPathsTest, PthreadExitOfTheWatchedThreadLetsTheProcessEnd) {
  const pid_t pid = fork();
  if (pid == 0) {
    // The forking thread is the child's only thread: once it has gone, only the watchdog is
    // left, which blocks every asynchronous signal. The thread ends as pthread_exit() ends it
    // (the exit system call), without pthread_exit()'s unwinding, which GoogleTest's
    // catch (...) around the test body would stop (tests/integrations/preload_exit_test.cc
    // calls pthread_exit() itself, from Python).
    if (!Start(LongThresholdConfig()).ok()) _exit(10);
    BeginWork();
    EndWork();
    syscall(SYS_exit, 0);
  }
  ASSERT_GT(pid, 0);
  // pthread_exit() of the last thread ends the process with status 0.
  EXPECT_EQ(WaitForChild(pid, 10s), 0) << "the watchdog kept the process alive";
}

TEST(ExitPathsTest, SamplingSignalResetToDefaultNeverKillsTheProgram) {
  const pid_t pid = fork();
  if (pid == 0) {
    Config c = testing::TestConfig();
    if (!Start(c).ok()) _exit(10);
    const int sig = agent::SamplingSignal();
    if (sig == 0) _exit(11);
    // The application makes the signal its own again: SIG_DFL terminates the process.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (sigaction(sig, &dfl, nullptr) != 0) _exit(12);
    BeginWork();
    Spin(400ms);  // a busy hang: the watchdog would interrupt it
    EndWork();
    testing::WaitUntil([] { return GetStats().hangs > 0; }, 5s);
    const Stats stats = GetStats();
    Stop();
    struct sigaction now {};
    sigaction(sig, nullptr, &now);
    if (now.sa_handler != SIG_DFL) _exit(13);  // Stop() put something else back
    _exit(stats.hangs > 0 ? 0 : 14);
  }
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitForChild(pid, 20s), 0)
      << "128 + the signal's number: the program was killed by hangwatch's signal";
}

std::atomic<int> g_app_signals{0};

TEST(ExitPathsTest, SamplingSignalTakenByTheApplicationIsNeverSentToIt) {
  testing::HangCollector hangs;
  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  const int sig = agent::SamplingSignal();
  ASSERT_NE(sig, 0);
  struct sigaction app {};
  app.sa_handler = [](int) { g_app_signals.fetch_add(1); };
  sigemptyset(&app.sa_mask);
  struct sigaction ours {};
  ASSERT_EQ(sigaction(sig, &app, &ours), 0);
  BeginWork();
  Spin(400ms);
  EndWork();
  EXPECT_TRUE(hangs.WaitFor(1)) << "the hang is still detected, without the signal";
  Stop();
  EXPECT_EQ(g_app_signals.load(), 0) << "the application's handler received hangwatch's signal";
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  EXPECT_EQ(now.sa_handler, app.sa_handler) << "Stop() replaced the application's handler";
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

}  // namespace
}  // namespace hangwatch
