// A process stopped with SIGSTOP for 2 s, while its run loop is idle and while a pass is busy:
// no false hang, and the stopped time is not counted. The agent runs in a forked child that the
// test stops and continues; the child reports through a pipe.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "agent/core/agent_internal.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;

enum class Scenario { kIdle, kBusyShort, kBusyLong };

struct ChildResult {
  uint64_t hangs = 0;
  uint64_t duration_ms = 0;  // of the hang, when there is one
  uint64_t hang_stopped_ms = 0;
  uint64_t stats_stopped_ms = 0;
  uint64_t wall_ms = 0;  // of the pass, as the child measured it
};

// Burns `ns` of this thread's CPU time (not wall time: a stop does not shorten the work).
void BurnCpu(uint64_t ns) {
  const uint64_t end = testing::ThreadCpuNs() + ns;
  while (testing::ThreadCpuNs() < end) {
  }
}

bool WriteAll(int fd, const void* p, size_t n) {
  return write(fd, p, n) == static_cast<ssize_t>(n);
}

[[noreturn]] void RunChild(Scenario sc, int to_parent, int from_parent) {
  if (!Start(testing::TestConfig()).ok()) _exit(10);
  ChildResult r;
  const uint64_t t0 = testing::MonoNs();
  if (sc == Scenario::kIdle) {
    // The watchdog accounts a gap between two of its looks: it must have looked once before
    // the stop (a thread start can take longer than the parent's kill, e.g. under qemu-user).
    // A pass it has seen proves that; the pass ends at once, before the stop.
    BeginWork();
    while (!agent::WatchdogSeesCurrentPass()) {
    }
    EndWork();
    WriteAll(to_parent, "M", 1);
    char c;
    if (read(from_parent, &c, 1) != 1) _exit(11);  // idle in the "run loop" until told
  } else if (sc == Scenario::kBusyShort) {
    // Busy before and after the stop, but only briefly: spin (polling the pipe) from the
    // moment the parent is told until it says the stop is over.
    BeginWork();
    while (!agent::WatchdogSeesCurrentPass()) BurnCpu(100'000);  // busy until followed
    WriteAll(to_parent, "M", 1);  // the parent stops us now, mid-pass
    fcntl(from_parent, F_SETFL, O_NONBLOCK);
    char c;
    while (read(from_parent, &c, 1) != 1) {
    }
    EndWork();
  } else {
    BeginWork();
    BurnCpu(150'000'000);
    WriteAll(to_parent, "M", 1);  // the parent stops us now, mid-pass
    BurnCpu(150'000'000);
    EndWork();
  }
  r.wall_ms = (testing::MonoNs() - t0) / 1'000'000;
  Stop();
  const auto hangs = RecentHangs();
  r.hangs = hangs.size();
  if (!hangs.empty()) {
    r.duration_ms = hangs[0].duration_ms;
    r.hang_stopped_ms = hangs[0].stopped_ms;
  }
  r.stats_stopped_ms = GetStats().stopped_ms;
  WriteAll(to_parent, &r, sizeof(r));
  _exit(0);
}

ChildResult RunStopped(Scenario sc) {
  int up[2], down[2];
  EXPECT_EQ(pipe(up), 0);
  EXPECT_EQ(pipe(down), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    RunChild(sc, up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  ChildResult r;
  char c = 0;
  EXPECT_EQ(read(up[0], &c, 1), 1);
  EXPECT_EQ(c, 'M');
  EXPECT_EQ(kill(pid, SIGSTOP), 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WUNTRACED), pid);  // the child is really stopped
  EXPECT_TRUE(WIFSTOPPED(status));
  std::this_thread::sleep_for(2s);  // the stop itself
  EXPECT_EQ(kill(pid, SIGCONT), 0);
  if (sc != Scenario::kBusyLong) {
    EXPECT_EQ(write(down[1], "Q", 1), 1);
  }
  EXPECT_EQ(read(up[0], &r, sizeof(r)), static_cast<ssize_t>(sizeof(r)));
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  close(up[0]);
  close(down[1]);
  return r;
}

TEST(SigstopE2eTest, StoppedWhileIdleIsNoHang) {
  const ChildResult r = RunStopped(Scenario::kIdle);
  EXPECT_EQ(r.hangs, 0u);
  EXPECT_GE(r.stats_stopped_ms, 1500u) << "the watchdog noticed the stop";
}

TEST(SigstopE2eTest, StoppedDuringAShortBusyPassIsNoHang) {
  const ChildResult r = RunStopped(Scenario::kBusyShort);
  EXPECT_GE(r.wall_ms, 2000u) << "the pass spanned the stop";
  EXPECT_EQ(r.hangs, 0u) << "a few ms of work plus 2 s stopped is not a hang; reported "
                         << r.duration_ms << " ms with " << r.hang_stopped_ms
                         << " ms stopped, pass wall " << r.wall_ms << " ms";
  EXPECT_GE(r.stats_stopped_ms, 1500u);
}

TEST(SigstopE2eTest, StoppedTimeIsNotCountedInARealHang) {
  const ChildResult r = RunStopped(Scenario::kBusyLong);
  ASSERT_EQ(r.hangs, 1u) << "300 ms of work is a hang";
  EXPECT_GE(r.wall_ms, 2000u);
  EXPECT_GE(r.hang_stopped_ms, 1500u);
  EXPECT_LT(r.duration_ms, r.wall_ms - 1500) << "the stop was counted";
  // What is left is the work (300 ms of CPU, more in wall time on a loaded machine).
  EXPECT_GE(r.duration_ms + 20, 300u);
  EXPECT_NEAR(static_cast<double>(r.duration_ms + r.hang_stopped_ms),
              static_cast<double>(r.wall_ms), 150.0);
}

}  // namespace
}  // namespace hangwatch
