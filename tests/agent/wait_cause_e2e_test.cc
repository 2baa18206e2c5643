// End to end: the main thread waits, and the hang names why (issue "why it waited"): a lock's
// owner with its stack captured in the same sample, a deadlock (live, and read back after the
// process was killed), a child, a sleep; and hangwatch's own pause of the main thread.
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
#include <mutex>
#include <string>
#include <thread>

#include "agent/open_hang_file.h"
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
  ASSERT_EQ(sleep.cause.kind, CauseKind::kSleep) << sleep.cause.summary;
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

}  // namespace
}  // namespace hangwatch
