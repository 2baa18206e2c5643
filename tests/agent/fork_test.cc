// fork() in a process the agent watches. A child inherits a copy of the agent but not its
// watchdog thread; it must exit promptly with its own status whatever the parent was doing
// (watchdog asleep, a hang open, captures going on, a sampling signal pending, a JSON Lines
// write blocked), start an agent of its own if it wants, and leave the parent's undisturbed.
// (Under AddressSanitizer this binary runs without LeakSanitizer: its check at a forked child's
// exit stops the threads in the registry it inherited, which are the parent's, and reports
// what only their stacks point to; see tests/CMakeLists.txt.)
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "agent/core/agent_internal.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/frozen_file_system.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::TestConfig;
using testing::WaitForChild;
using testing::WaitUntil;

void Spin(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// A hang of the calling (watched) thread, and the parent still reports it after the forks.
void ExpectParentStillWatches(HangCollector* hangs) {
  const size_t before = hangs->size();
  BeginWork();
  Spin(250ms);
  EndWork();
  EXPECT_TRUE(hangs->WaitFor(before + 1)) << "the parent's agent stopped reporting";
}

TEST(ForkTest, ChildExitsWhileTheWatchdogSleeps) {
  HangCollector hangs;
  ASSERT_TRUE(Start(TestConfig()).ok());
  const pid_t pid = fork();
  if (pid == 0) {
    std::exit(7);  // static destructors and atexit handlers run
  }
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitForChild(pid), 7);
  ExpectParentStillWatches(&hangs);
  Stop();
}

TEST(ForkTest, ChildExitsWhileAHangIsOpen) {
  HangCollector hangs;
  Config c = TestConfig();
  c.threshold = 40ms;
  c.sample_interval = 2ms;
  c.check_interval = 2ms;
  ASSERT_TRUE(Start(c).ok());
  const auto started = std::chrono::steady_clock::now();
  BeginWork();
  // Past the threshold with samples taken: the hang is open in the watchdog.
  while (GetStats().samples < 5 || std::chrono::steady_clock::now() - started < 80ms) {
  }
  const pid_t pid = fork();
  if (pid == 0) {
    EndWork();
    std::exit(8);
  }
  EndWork();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitForChild(pid), 8);
  EXPECT_TRUE(hangs.WaitFor(1)) << "the parent's open hang is still reported";
  Stop();
}

TEST(ForkTest, ManyForksWhileTheMainThreadIsBeingCaptured) {
  // The main thread is in a long hang sampled every millisecond (a signal, a capture, CFI);
  // another thread forks again and again. Every child exits with its own status.
  Config c = TestConfig();
  c.threshold = 5ms;
  c.sample_interval = 1ms;
  c.check_interval = 1ms;
  c.stack_copy_bytes = 16 * 1024;
  ASSERT_TRUE(Start(c).ok());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread forker([&] {
    for (int i = 0; i < 100; ++i) {
      const pid_t pid = fork();
      if (pid == 0) std::exit(i % 50 + 1);
      if (WaitForChild(pid) != i % 50 + 1) failures.fetch_add(1);
    }
    done.store(true);
  });
  BeginWork();
  while (!done.load()) {
  }
  EndWork();
  forker.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(GetStats().samples, 0u);
  Stop();
}

TEST(ForkTest, ChildWithAPendingSamplingSignalStartsItsOwnAgent) {
  Config c = TestConfig();
  c.threshold = 30ms;
  c.sample_interval = 3ms;
  c.check_interval = 3ms;
  ASSERT_TRUE(Start(c).ok());
  const int sig = agent::SamplingSignal();
  ASSERT_NE(sig, 0);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, sig);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  BeginWork();
  // The watchdog asks for a capture the main thread cannot answer: the signal stays pending.
  ASSERT_TRUE(WaitUntil([&] {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, sig) == 1;
  }));
  const pid_t pid = fork();
  if (pid == 0) {
    EndWork();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    Stop();  // the parent's agent is not the child's: a no-op
    if (IsRunning()) std::_Exit(20);
    static std::atomic<int> own_hangs{0};
    static std::atomic<bool> own_pid{true};
    Config cc = TestConfig();
    cc.threshold = 30ms;
    cc.on_hang = [](const HangRecord& r) {
      own_pid.store(own_pid.load() && r.pid == getpid());
      own_hangs.fetch_add(1);
    };
    if (!Start(cc).ok()) std::_Exit(21);
    // A pass past the threshold that the child's own watchdog has sampled.
    BeginWork();
    const auto began = std::chrono::steady_clock::now();
    while (GetStats().samples < 3 || std::chrono::steady_clock::now() - began < 60ms) {
    }
    EndWork();
    if (!WaitUntil([] { return own_hangs.load() > 0; })) std::_Exit(22);
    const uint64_t samples = GetStats().samples;
    Stop();
    std::exit(samples > 0 && own_pid.load() ? 9 : 23);
  }
  EndWork();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);  // the pending signal is ours: ignored
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitForChild(pid), 9);
  Stop();
}

// True when thread `tid` is asleep waiting for a frozen file system to thaw (its kernel wait
// channel: the system call number would not do, since under qemu-user /proc shows the host's).
bool InFrozenWrite(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/wchan", tid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char wchan[64] = {};
  const bool ok = std::fgets(wchan, sizeof wchan, f) != nullptr;
  std::fclose(f);
  return ok && std::strstr(wchan, "percpu_rwsem") != nullptr;
}

TEST(ForkTest, ChildExitsWhileTheWatchdogIsBlockedWritingJsonLines) {
  char dir[] = "/tmp/hangwatch-fork-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  // The report on a frozen file system: the watchdog's next line blocks in write(). (A FIFO,
  // which would block too, is refused as a report.)
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() { (void)!std::system(("rm -rf '" + dir + "'").c_str()); }
  } remove_dir{dir};
  testing::FreezableFileSystem fs(dir);
  if (!fs.ok()) GTEST_SKIP() << "cannot mount a file system from a file here (needs root)";
  Config c = TestConfig();
  c.threshold = 30ms;
  c.json_path = fs.path() + "/hangs.jsonl";
  ASSERT_TRUE(Start(c).ok());
  // Whatever happens below, the file system is thawed so that the watchdog can finish and
  // stop (a thread blocked on it can do nothing else).
  struct Cleanup {
    testing::FreezableFileSystem& fs;
    ~Cleanup() {
      fs.Thaw();
      Stop();
    }
  } cleanup{fs};
  ASSERT_TRUE(fs.Freeze());
  pid_t watchdog = 0;  // named by the watchdog itself once it runs
  WaitUntil([&] {
    const auto tids = testing::ThreadsNamed("hangwatch");
    watchdog = tids.empty() ? 0 : tids[0];
    return watchdog != 0;
  });
  ASSERT_NE(watchdog, 0);
  BeginWork();
  Spin(100ms);
  EndWork();
  ASSERT_TRUE(WaitUntil([&] { return InFrozenWrite(watchdog); }))
      << "the watchdog never blocked writing the hang";
  const pid_t pid = fork();
  if (pid == 0) std::exit(10);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitForChild(pid), 10) << "fork waited for the blocked write, or the child hung";
}

}  // namespace
}  // namespace hangwatch
