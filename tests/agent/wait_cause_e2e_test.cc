// End to end: the main thread waits, and the hang names why: a lock's
// owner with its stack captured in the same sample, a deadlock (live, and read back after the
// process was killed), a child, a sleep; and hangwatch's own pause of the main thread; a timed
// lock, a timed sleep and a deadlock of timed locks that a stop (SIGSTOP, SIGCONT) turned into
// restart_syscall.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "report/report_decode.h"
#include "report/report_record.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using agent::OpenHangReadStatus;
using agent::ReadOpenHangFile;

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

Config CauseConfig() {
  Config c = testing::TestConfig();
  c.stack_copy_bytes = 32 * 1024;  // the owners' stacks are unwound with CFI from a copy
  return c;
}

// The owner's body while it holds the lock: asleep in nanosleep until released.
HW_TEST_KEEP_FRAME void WriteJournalSlowly(const std::atomic<bool>* release) {
  while (!release->load()) {
    timespec ts{0, 2'000'000};
    nanosleep(&ts, nullptr);
  }
}

bool Mentions(const std::vector<Frame>& frames, const char* name) {
  for (const Frame& f : frames) {
    if (f.symbol.find(name) != std::string::npos) return true;
  }
  return false;
}

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  std::string p = std::string(dir ? dir : "/tmp") + "/hangwatch_" + name + "_" +
                  std::to_string(getpid()) + ".bin";
  unlink(p.c_str());
  return p;
}

TEST(WaitCauseE2eTest, MutexHeldByANamedWorkerNamesItAndWhatItDoes) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  ASSERT_TRUE(Start(CauseConfig()).ok());
  testing::HangCollector collector;
  std::mutex m;
  std::atomic<bool> held{false}, release{false};
  std::atomic<pid_t> owner_tid{0};
  std::thread owner([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    owner_tid = Tid();
    std::lock_guard<std::mutex> g(m);
    held = true;
    WriteJournalSlowly(&release);
  });
  while (!held) std::this_thread::sleep_for(1ms);
  // Let go once the hang has a few samples (the watchdog counts them).
  std::thread releaser([&] {
    const uint64_t before = GetStats().samples;
    testing::WaitUntil([&] { return GetStats().samples >= before + 15; });
    release = true;
  });
  BeginWork();
  m.lock();
  m.unlock();
  EndWork();
  releaser.join();
  owner.join();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  ASSERT_EQ(h.cause.kind, CauseKind::kLock) << h.cause.summary;
  EXPECT_EQ(h.cause.lock.type, "mutex");
  EXPECT_EQ(h.cause.lock.addr, reinterpret_cast<uint64_t>(&m));
  ASSERT_TRUE(h.cause.has_owner);
  EXPECT_EQ(h.cause.owner.tid, owner_tid);
  EXPECT_EQ(h.cause.owner.name, "db-writer");
  EXPECT_NE(h.cause.owner.syscall.find("nanosleep("), std::string::npos) << h.cause.owner.syscall;
  EXPECT_TRUE(Mentions(h.cause.owner.frames, "WriteJournalSlowly"));
  EXPECT_NE(h.cause.owner.culprit.symbol.find("WriteJournalSlowly"), std::string::npos)
      << h.cause.owner.culprit.symbol;
  EXPECT_NE(h.cause.summary.find("held by thread " + std::to_string(owner_tid) +
                                 " \"db-writer\", which is in"),
            std::string::npos)
      << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("WriteJournalSlowly"), std::string::npos) << h.cause.summary;
  // Samples carry their cause and the owner.
  bool sample_names_owner = false;
  for (const TimelineEntry& t : h.timeline) {
    sample_names_owner |= t.cause == CauseKind::kLock && t.cause_tid == owner_tid;
  }
  EXPECT_TRUE(sample_names_owner);
  // The JSON line carries it and reads back the same.
  const std::string line = report::Encode(h);
  HangRecord back;
  std::string error;
  ASSERT_TRUE(report::DecodeHang(line, &back, &error)) << error;
  EXPECT_EQ(back.cause.kind, CauseKind::kLock);
  EXPECT_EQ(back.cause.summary, h.cause.summary);
  EXPECT_EQ(back.cause.owner.tid, owner_tid);
  EXPECT_EQ(back.cause.owner.frames.size(), h.cause.owner.frames.size());
  EXPECT_EQ(back.cause.owner.culprit.symbol, h.cause.owner.culprit.symbol);
  EXPECT_EQ(back.monitor_pause_us, h.monitor_pause_us);
}

// main -> A held by "db-writer" -> B held by "journal", asleep in WriteJournalSlowly: the chain
// names both owners, each with its stack.
TEST(WaitCauseE2eTest, ChainOfTwoLocksNamesBothOwners) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  ASSERT_TRUE(Start(CauseConfig()).ok());
  testing::HangCollector collector;
  std::mutex a, b;
  std::atomic<bool> release{false}, journal_holds{false}, writer_holds{false};
  std::atomic<pid_t> writer_tid{0}, journal_tid{0};
  std::thread journal([&] {
    pthread_setname_np(pthread_self(), "journal");
    journal_tid = Tid();
    std::lock_guard<std::mutex> g(b);
    journal_holds = true;
    WriteJournalSlowly(&release);
  });
  while (!journal_holds) std::this_thread::sleep_for(1ms);
  std::thread writer([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    writer_tid = Tid();
    std::lock_guard<std::mutex> g(a);
    writer_holds = true;
    std::lock_guard<std::mutex> g2(b);
  });
  while (!writer_holds) std::this_thread::sleep_for(1ms);
  std::thread releaser([&] {
    const uint64_t before = GetStats().samples;
    testing::WaitUntil([&] { return GetStats().samples >= before + 15; });
    release = true;
  });
  BeginWork();
  a.lock();
  a.unlock();
  EndWork();
  releaser.join();
  writer.join();
  journal.join();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kLock) << h.cause.summary;
  ASSERT_EQ(h.cause.chain.size(), 2u) << h.cause.summary;
  EXPECT_EQ(h.cause.chain[0].tid, writer_tid);
  EXPECT_EQ(h.cause.chain[0].name, "db-writer");
  EXPECT_EQ(h.cause.chain[0].wants.addr, reinterpret_cast<uint64_t>(&b));
  EXPECT_EQ(h.cause.chain[1].tid, journal_tid);
  EXPECT_EQ(h.cause.chain[1].name, "journal");
  EXPECT_EQ(h.cause.chain[1].holds.addr, reinterpret_cast<uint64_t>(&b));
  EXPECT_NE(h.cause.chain[1].culprit.symbol.find("WriteJournalSlowly"), std::string::npos)
      << h.cause.chain[1].culprit.symbol;
  EXPECT_FALSE(h.cause.chain[0].frames.empty());
  EXPECT_NE(h.cause.summary.find("\"db-writer\", which waits for mutex"), std::string::npos)
      << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("\"journal\", which is in"), std::string::npos) << h.cause.summary;
}

TEST(WaitCauseE2eTest, SleepAndChildAreNamed) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  ASSERT_TRUE(Start(CauseConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  timespec ts{0, 400'000'000};
  nanosleep(&ts, nullptr);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  const pid_t child = fork();
  if (child == 0) {
    timespec one{1, 0};
    nanosleep(&one, nullptr);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  BeginWork();
  int status = 0;
  waitpid(child, &status, 0);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(2));
  Stop();
  const HangRecord sleep = collector.hangs()[0];
  EXPECT_EQ(sleep.cause.kind, CauseKind::kSleep) << sleep.cause.summary;
  EXPECT_EQ(sleep.cause.sleep_ms, 400u);
  EXPECT_NE(sleep.cause.summary.find("slept 400 ms on the main thread"), std::string::npos)
      << sleep.cause.summary;
  const HangRecord wait = collector.hangs()[1];
  ASSERT_EQ(wait.cause.kind, CauseKind::kChild) << wait.cause.summary;
  EXPECT_EQ(wait.cause.child.pid, child);
  // Asleep while waited for; running or a zombie when the last sample caught it exiting.
  EXPECT_NE(std::string("SRZ").find(wait.cause.child.state), std::string::npos)
      << wait.cause.child.state;
  EXPECT_NE(wait.cause.summary.find("waiting for child " + std::to_string(child)),
            std::string::npos);
}

volatile uint64_t g_spin;
HW_TEST_KEEP_FRAME void SpinFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) g_spin = g_spin + 1;
}

TEST(WaitCauseE2eTest, BusyHangSaysHowLongHangwatchPausedTheMainThread) {
  ASSERT_TRUE(Start(CauseConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  SpinFor(400ms);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  // Interrupted by the signal at every sample: each pause is counted, and all of them are a
  // small part of the hang.
  EXPECT_GT(h.monitor_pause_us, 0u);
  EXPECT_LT(h.monitor_pause_us, h.duration_ms * 1000 / 2);
  // A computation has no wait to name; on a loaded machine the scheduler's refinements of a
  // busy hang may say it was short of a CPU (starved, throttled, pressure), nothing else.
  const CauseKind k = h.cause.kind;
  EXPECT_TRUE(k == CauseKind::kNone || k == CauseKind::kStarved || k == CauseKind::kThrottled ||
              k == CauseKind::kPressure)
      << h.cause.summary;
}

// The main thread and a worker each hold one mutex and want the other's, forever. The open
// hang says deadlock while it lasts, and so does the fatal hang read back after kill -9.
TEST(WaitCauseE2eTest, DeadlockLiveAndAfterKill) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  const std::string path = TempPath("deadlock");
  const pid_t pid = fork();
  if (pid == 0) {
    Config c = CauseConfig();
    c.open_hang_path = path;
    if (!Start(c).ok()) _exit(10);
    static std::mutex a, b;
    std::atomic<bool> worker_holds{false};
    a.lock();
    std::thread worker([&] {
      pthread_setname_np(pthread_self(), "worker-b");
      b.lock();
      worker_holds = true;
      a.lock();
    });
    while (!worker_holds) std::this_thread::sleep_for(1ms);
    BeginWork();
    b.lock();
    _exit(11);
  }
  ASSERT_GT(pid, 0);
  HangRecord live;
  std::string error;
  const bool seen = testing::WaitUntil(
      [&] {
        return ReadOpenHangFile(path, &live, &error) == OpenHangReadStatus::kFound &&
               live.cause.kind == CauseKind::kDeadlock;
      },
      20s);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(seen) << "no deadlock in the open hang " << path << " " << error << " "
                    << live.cause.summary;
  HangRecord fatal;
  ASSERT_EQ(ReadOpenHangFile(path, &fatal, &error), OpenHangReadStatus::kFound) << error;
  unlink(path.c_str());
  for (const HangRecord* h : {&live, &fatal}) {
    EXPECT_TRUE(h->fatal);
    ASSERT_EQ(h->cause.kind, CauseKind::kDeadlock) << h->cause.summary;
    ASSERT_EQ(h->cause.cycle.size(), 2u) << h->cause.summary;
    EXPECT_EQ(h->cause.cycle[0].tid, pid) << "the main thread is in the cycle";
    EXPECT_EQ(h->cause.cycle[1].name, "worker-b");
    EXPECT_EQ(h->cause.cycle[0].wants.addr, h->cause.cycle[1].holds.addr);
    EXPECT_EQ(h->cause.cycle[1].wants.addr, h->cause.cycle[0].holds.addr);
    EXPECT_FALSE(h->cause.cycle[1].frames.empty()) << "the worker's stack, from the same sample";
    EXPECT_NE(h->cause.summary.find("deadlock of 2 threads: thread " + std::to_string(pid)),
              std::string::npos)
        << h->cause.summary;
    EXPECT_NE(h->cause.summary.find("\"worker-b\""), std::string::npos) << h->cause.summary;
  }
}

// ---- waits restarted by a stop ----

// The system call number thread `tid` of this process sleeps in (-1: running or unreadable).
int64_t SyscallOf(pid_t tid) {
  char path[64];
  char buf[256];
  unwind::TaskPath(0, tid, "syscall", path, sizeof(path));
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
  unwind::TaskSyscall sys;
  if (n <= 0 || !unwind::ParseTaskSyscall(buf, static_cast<size_t>(n), &sys) || sys.fields != 9) {
    return -1;
  }
  return sys.nr;
}

bool WaitForSyscall(pid_t tid, int64_t nr) {
  return testing::WaitUntil([&] { return SyscallOf(tid) == nr; });
}

// Reads exactly n bytes, each read bounded by `ms`: false on EOF, error or timeout.
bool ReadFully(int fd, void* out, size_t n, int ms = 20000) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, ms) != 1) return false;
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void OnUsr1(int) {}

// The owner's body: holds the lock while asleep for up to 30 s (a timed wait that the stop
// restarts too), until SIGUSR1 ends its sleep.
HW_TEST_KEEP_FRAME void FlushJournalForLong() {
  timespec ts{30, 0};
  nanosleep(&ts, nullptr);
}

struct RestartResult {
  bool lock_restarted = false;   // the main thread's timed lock was seen in restart_syscall
  bool sleep_restarted = false;  // and so was its sleep
  pid_t owner_tid = 0;
  uint32_t hangs = 0;
};

// The forked child: a timed lock held by "db-writer", then a 5 s sleep, both on the main thread
// and both inside a pass. Before each, 'L' / 'S' tells the parent to stop and continue us; a
// watcher thread waits for the restart, lets the agent take 10 more samples, then ends the
// wait (SIGUSR1 ends the owner's sleep, then the main thread's). The hangs go up the pipe as
// JSON lines.
[[noreturn]] void RunRestartedChild(int to_parent) {
  Config c = CauseConfig();
  if (!Start(c).ok()) _exit(10);
  struct sigaction sa {};
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, nullptr);
  const pid_t main_tid = Tid();
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static RestartResult r;
  std::atomic<bool> held{false};
  std::thread owner([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    r.owner_tid = Tid();
    pthread_mutex_lock(&m);
    held = true;
    FlushJournalForLong();
    pthread_mutex_unlock(&m);
  });
  while (!held) std::this_thread::sleep_for(1ms);
  auto stop_then_ten_samples = [&](char what, int64_t nr) {
    if (!WaitForSyscall(main_tid, nr)) return false;
    if (write(to_parent, &what, 1) != 1) return false;
    if (!WaitForSyscall(main_tid, SYS_restart_syscall)) return false;
    const uint64_t before = GetStats().samples;
    return testing::WaitUntil([&] { return GetStats().samples >= before + 10; });
  };
  std::thread watcher([&] {
    r.lock_restarted = stop_then_ten_samples('L', SYS_futex);
    syscall(SYS_tgkill, getpid(), r.owner_tid, SIGUSR1);
    r.sleep_restarted = stop_then_ten_samples('S', SYS_clock_nanosleep);
    syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
  });
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  BeginWork();
  const int locked = pthread_mutex_timedlock(&m, &deadline);
  if (locked == 0) pthread_mutex_unlock(&m);
  EndWork();
  BeginWork();
  timespec five{5, 0};
  nanosleep(&five, nullptr);  // glibc: clock_nanosleep(CLOCK_REALTIME, 0, ...)
  EndWork();
  watcher.join();
  owner.join();
  Stop();
  const std::vector<HangRecord> hangs = RecentHangs();
  r.hangs = static_cast<uint32_t>(hangs.size());
  if (write(to_parent, &r, sizeof(r)) != sizeof(r)) _exit(12);
  for (const HangRecord& h : hangs) {
    const std::string line = report::Encode(h);
    const uint32_t n = static_cast<uint32_t>(line.size());
    if (write(to_parent, &n, sizeof(n)) != sizeof(n)) _exit(13);
    if (write(to_parent, line.data(), n) != static_cast<ssize_t>(n)) _exit(14);
  }
  _exit(0);
}

// Stops the child (SIGSTOP, seen stopped) and continues it.
void StopAndContinue(pid_t pid) {
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  ASSERT_EQ(kill(pid, SIGCONT), 0);
}

// Ctrl-Z then fg (or a debugger attaching) during a timed wait: the wait resumes as
// restart_syscall, whose syscall line keeps the arguments but not the number. The lock's owner
// and the sleep's length are still named, in the hang and in every sample.
TEST(WaitCauseE2eTest, TimedLockAndSleepRestartedByAStopKeepTheirCauses) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  int up[2];
  ASSERT_EQ(pipe(up), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(up[0]);
    RunRestartedChild(up[1]);
  }
  ASSERT_GT(pid, 0);
  close(up[1]);
  char c = 0;
  for (char expected : {'L', 'S'}) {
    if (!ReadFully(up[0], &c, 1) || c != expected) break;
    StopAndContinue(pid);
  }
  RestartResult r;
  std::vector<HangRecord> hangs;
  const bool read_all = ReadFully(up[0], &r, sizeof(r));
  for (uint32_t i = 0; read_all && i < r.hangs; ++i) {
    uint32_t n = 0;
    std::string line;
    if (!ReadFully(up[0], &n, sizeof(n))) break;
    line.resize(n);
    if (!ReadFully(up[0], line.data(), n)) break;
    HangRecord h;
    std::string error;
    EXPECT_TRUE(report::DecodeHang(line, &h, &error)) << error;
    hangs.push_back(h);
  }
  close(up[0]);
  EXPECT_EQ(testing::WaitForChild(pid, 20s), 0);
  ASSERT_TRUE(read_all) << "the child sent nothing (it stopped at '" << c << "')";
  ASSERT_TRUE(r.lock_restarted) << "the timed lock was never seen in restart_syscall";
  ASSERT_TRUE(r.sleep_restarted) << "the sleep was never seen in restart_syscall";
  ASSERT_EQ(hangs.size(), 2u);

  const HangRecord& lock = hangs[1];  // newest first
  EXPECT_EQ(lock.cause.kind, CauseKind::kLock) << lock.cause.summary;
  EXPECT_EQ(lock.cause.lock.type, "mutex");
  EXPECT_TRUE(lock.cause.has_owner) << lock.cause.summary;
  EXPECT_EQ(lock.cause.owner.tid, r.owner_tid);
  EXPECT_EQ(lock.cause.owner.name, "db-writer");
  // The owner's own sleep was restarted by the same stop: named as the sleep it is.
  EXPECT_NE(lock.cause.owner.syscall.find("nanosleep("), std::string::npos)
      << lock.cause.owner.syscall;
  EXPECT_NE(
      lock.cause.summary.find("held by thread " + std::to_string(r.owner_tid) + " \"db-writer\""),
      std::string::npos)
      << lock.cause.summary;
  // Every sample that found the main thread waiting says lock (one may find the owner letting
  // go: no owner then), and the 10 taken after the restart name the owner.
  size_t naming_owner = 0, other = 0;
  for (const TimelineEntry& t : lock.timeline) {
    if (t.cause == CauseKind::kNone) continue;
    other += t.cause != CauseKind::kLock;
    naming_owner += t.cause == CauseKind::kLock && t.cause_tid == r.owner_tid;
  }
  EXPECT_EQ(other, 0u) << "samples with another cause";
  EXPECT_GE(naming_owner, 10u);

  const HangRecord& sleep = hangs[0];
  EXPECT_EQ(sleep.cause.kind, CauseKind::kSleep) << sleep.cause.summary;
  EXPECT_EQ(sleep.cause.sleep_ms, 5000u) << sleep.cause.summary;
  EXPECT_NE(sleep.cause.syscall.find("clock_nanosleep("), std::string::npos) << sleep.cause.syscall;
  size_t sleeping = 0;
  other = 0;
  for (const TimelineEntry& t : sleep.timeline) {
    if (t.cause == CauseKind::kNone) continue;
    other += t.cause != CauseKind::kSleep;
    sleeping += t.cause == CauseKind::kSleep;
  }
  EXPECT_EQ(other, 0u) << "samples with another cause";
  EXPECT_GE(sleeping, 10u);
}

timespec In30s() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += 30;
  return t;
}

// A deadlock of timed locks (it ends only at their deadline): the worker's wait was restarted
// by a stop before the main thread's began, so every sample reads the worker in restart_syscall.
// It is still the other half of the cycle.
TEST(WaitCauseE2eTest, TimedLockDeadlockWithARestartedThreadIsADeadlock) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  const std::string path = TempPath("restarted_deadlock");
  int up[2];
  ASSERT_EQ(pipe(up), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(up[0]);
    Config c = CauseConfig();
    c.open_hang_path = path;
    if (!Start(c).ok()) _exit(10);
    static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
    std::atomic<pid_t> worker_tid{0};
    pthread_mutex_lock(&a);
    std::thread worker([&] {
      pthread_setname_np(pthread_self(), "worker-b");
      pthread_mutex_lock(&b);
      worker_tid = Tid();
      const timespec deadline = In30s();
      pthread_mutex_timedlock(&a, &deadline);
      _exit(12);
    });
    while (worker_tid == 0) std::this_thread::sleep_for(1ms);
    if (!WaitForSyscall(worker_tid, SYS_futex)) _exit(13);
    if (write(up[1], "D", 1) != 1) _exit(14);  // the parent stops and continues us
    if (!WaitForSyscall(worker_tid, SYS_restart_syscall)) _exit(15);
    BeginWork();
    const timespec deadline = In30s();
    pthread_mutex_timedlock(&b, &deadline);
    _exit(11);
  }
  ASSERT_GT(pid, 0);
  close(up[1]);
  char c = 0;
  if (ReadFully(up[0], &c, 1) && c == 'D') StopAndContinue(pid);
  close(up[0]);
  // Until the open hang has 10 samples with a cause (or the child ended: it failed).
  HangRecord live;
  std::string error;
  const bool seen = testing::WaitUntil(
      [&] {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
        return ReadOpenHangFile(path, &live, &error) == OpenHangReadStatus::kFound &&
               live.samples >= 10 && live.cause.kind != CauseKind::kNone;
      },
      20s);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  unlink(path.c_str());
  ASSERT_EQ(c, 'D') << "the child did not reach its deadlock";
  ASSERT_TRUE(seen) << "no open hang with a cause in " << path << " " << error;
  ASSERT_EQ(live.cause.kind, CauseKind::kDeadlock) << live.cause.summary;
  ASSERT_EQ(live.cause.cycle.size(), 2u) << live.cause.summary;
  EXPECT_EQ(live.cause.cycle[0].tid, pid);
  EXPECT_EQ(live.cause.cycle[1].name, "worker-b");
  EXPECT_NE(live.cause.cycle[1].syscall.find("futex("), std::string::npos)
      << live.cause.cycle[1].syscall;
  EXPECT_EQ(live.cause.cycle[1].wants.addr, live.cause.cycle[0].holds.addr);
}

}  // namespace
}  // namespace hangwatch
