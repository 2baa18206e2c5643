// Start/Stop: errors are reported clearly, cycles are repeatable and leave nothing behind (no
// thread, no descriptor, no signal handler, no pending signal; leaks are ASan's to find).
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "agent/core/agent_internal.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;

std::string FdList() {
  std::string out;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[512] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(link.c_str(), target, sizeof(target) - 1) > 0) {
      out += std::string(e->d_name) + "->" + target + " ";
    }
  }
  closedir(d);
  return out;
}

size_t CountEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return 0;
  size_t n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

struct Disposition {
  void* handler;
  int flags;
};
std::vector<Disposition> RtDispositions() {
  std::vector<Disposition> out;
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) {
    struct sigaction sa {};
    sigaction(s, nullptr, &sa);
    out.push_back({reinterpret_cast<void*>(sa.sa_sigaction), sa.sa_flags});
  }
  return out;
}

TEST(LifecycleTest, InvalidConfigIsAClearError) {
  Config c;
  c.threshold = 0ms;
  Status s = Start(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("threshold"), std::string::npos) << s.message();
  c = Config();
  c.early_sampling_fraction = 1.5;
  EXPECT_FALSE(Start(c).ok());
  c = Config();
  c.ring_capacity = 0;
  EXPECT_FALSE(Start(c).ok());
  c = Config();
  c.json_path = "/nonexistent-dir/x.jsonl";
  s = Start(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/x.jsonl"), std::string::npos) << s.message();
  EXPECT_FALSE(IsRunning());
}

TEST(LifecycleTest, StartTwiceFailsStopIsIdempotent) {
  Stop();  // not running: no-op
  Config c = testing::TestConfig();
  ASSERT_TRUE(Start(c).ok());
  EXPECT_TRUE(IsRunning());
  const Status again = Start(c);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already running"), std::string::npos);
  std::thread other([] { Stop(); });  // from any thread
  other.join();
  EXPECT_FALSE(IsRunning());
  Stop();
  ASSERT_TRUE(Start(c).ok());
  Stop();
}

TEST(LifecycleTest, SignalInUseIsRefusedNotClobbered) {
  // Pretend the application owns a real-time signal and ask for exactly that one.
  const int sig = SIGRTMIN + 3;
  struct sigaction app {};
  app.sa_handler = [](int) {};
  struct sigaction old {};
  ASSERT_EQ(sigaction(sig, &app, &old), 0);
  Config c = testing::TestConfig();
  c.signal = sig;
  const Status s = Start(c);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.message().empty());
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  EXPECT_EQ(now.sa_handler, app.sa_handler) << "the application's handler was replaced";
  sigaction(sig, &old, nullptr);
}

TEST(LifecycleTest, ThousandStartStopCyclesLeaveNothingBehind) {
  const auto dispositions = RtDispositions();
  Config c;
  c.threshold = 2ms;  // every cycle's pass is sampled, many become hangs
  c.sample_interval = 1ms;
  c.check_interval = 1ms;
  c.log_hangs = false;
  // Process-wide caches filled on first use (the symbolizer's per-module tables) are not
  // per-cycle resources: fill them before counting.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(Start(c).ok());
    BeginWork();
    testing::WaitUntil([] { return GetStats().samples > 0; }, 1s);
    Stop();
    EndWork();
  }
  const size_t fds = CountEntries("/proc/self/fd");
  const std::string fd_list = FdList();
  int signal_seen = 0;
  uint64_t samples = 0, hangs = 0;
  const size_t default_copy = c.stack_copy_bytes;
  for (int i = 0; i < 1000; ++i) {
    // Every tenth cycle with the default stack copy (and its CFI unwinder, slow to set up);
    // the others frame pointers only.
    c.stack_copy_bytes = i % 10 == 0 ? default_copy : 0;
    const Status s = Start(c);
    ASSERT_TRUE(s.ok()) << "cycle " << i << ": " << s.message();
    signal_seen = agent::SamplingSignal();
    BeginWork();
    const auto end = std::chrono::steady_clock::now() + 3ms;
    while (std::chrono::steady_clock::now() < end) {
    }
    if (i % 2 == 0) EndWork();  // half end before Stop, half are still running at Stop
    Stop();
    EndWork();
    samples += GetStats().samples;
    hangs += GetStats().hangs;
  }
  EXPECT_GT(samples, 0u) << "captures happened during the cycles";
  EXPECT_GT(hangs, 0u);
  ASSERT_NE(signal_seen, 0);
  // (Counting all threads would also count the sanitizer's own helper threads.)
  EXPECT_EQ(testing::ThreadsNamed("hangwatch").size(), 0u) << "a watchdog thread was left running";
  EXPECT_EQ(CountEntries("/proc/self/fd"), fds)
      << "descriptors before: " << fd_list << "\nafter: " << FdList();
  const auto after = RtDispositions();
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].handler, dispositions[i].handler) << "signal " << SIGRTMIN + int(i);
  }
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, signal_seen), 0) << "a sampling signal is still pending";
  // A stray sampling signal arriving now, with the default disposition restored, would kill
  // the process; give one the time to show up.
  std::this_thread::sleep_for(50ms);
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, signal_seen), 0);
}

}  // namespace
}  // namespace hangwatch
