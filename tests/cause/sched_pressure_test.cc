// SchedProbe / Compare on real contention: a thread sharing its CPU with three busy threads
// (sched_setaffinity) is starved; a file mapped, dropped from the page cache and touched gives
// major faults in that mapping; a child in a CPU-limited cgroup is throttled; a thread asleep
// has its kernel wait read; a dead thread gives empty snapshots, never a crash; the thread
// taking a snapshot is not counted among the runnable ones.
#include "cause/sched_pressure.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "blocked_thread.h"
#include "cause/fault.h"
#include "cause/kernel_wait.h"
#include "cpu_quota_cgroup.h"

namespace hangwatch::cause {
namespace {

std::string Summary(const SchedPressure& p) {
  char buf[512];
  FormatSummary(p, buf, sizeof buf);
  return buf;
}

void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
}

void BusyFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

TEST(SchedPressure, ThreadSharingItsCpuWithThreeBusyThreadsIsStarved) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 3; ++i) {
    hogs.emplace_back([&] {
      PinToCpu(cpu);
      ++started;
      volatile uint64_t x = 0;
      while (!stop) x = x + 1;
    });
  }
  while (started < 3) std::this_thread::yield();
  auto probe = std::make_unique<SchedProbe>();
  probe->Init(0);
  SchedSnapshot before, after;
  std::atomic<pid_t> busy_tid{0};
  std::thread busy([&] {
    PinToCpu(cpu);
    busy_tid = testing::CurrentTid();
    BusyFor(std::chrono::milliseconds(50));  // settle on the shared CPU
    probe->Take(testing::CurrentTid(), &before);
    BusyFor(std::chrono::milliseconds(800));
    probe->Take(testing::CurrentTid(), &after);
  });
  busy.join();
  stop = true;
  for (auto& t : hogs) t.join();

  const SchedPressure p = Compare(before, after);
  ASSERT_TRUE(p.has_run_delay) << "no schedstat (CONFIG_SCHED_INFO)";
  EXPECT_GE(p.duration_ns, 800'000'000);
  // Four threads on one CPU: the busy one ran about a quarter of the time.
  EXPECT_TRUE(p.starved) << Summary(p);
  EXPECT_GE(p.run_delay_permille, 500u) << Summary(p);
  EXPECT_GE(p.runnable_others, 1u) << Summary(p);
  EXPECT_NE(Summary(p).find("starved: waited "), std::string::npos) << Summary(p);
  if (before.cpu.some.present) {
    // The machine-wide CPU pressure includes our own run-queue waits.
    EXPECT_TRUE(p.cpu.present);
    EXPECT_GE(p.cpu.some_permille, 100u) << Summary(p);
    EXPECT_TRUE(p.pressure);
  }
  EXPECT_FALSE(p.d_state);
}

// The thread taking a snapshot is running while it reads the task list: it is not one of the
// target's competitors (the agent's watchdog would otherwise make every starved hang say "1
// other thread runnable").
TEST(SchedPressure, TheThreadTakingTheSnapshotIsNotCountedRunnable) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread sleeper([&] {
    tid = testing::CurrentTid();
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  while (tid == 0) std::this_thread::yield();
  auto probe = std::make_unique<SchedProbe>();
  probe->Init(0);
  SchedSnapshot snap;
  probe->Take(tid, &snap);
  stop = true;
  sleeper.join();
  ASSERT_TRUE(snap.has_threads);
  EXPECT_EQ(snap.runnable_others, 0u) << "this thread, reading, was counted";
}

TEST(SchedPressure, QuietThreadIsNotStarved) {
  auto probe = std::make_unique<SchedProbe>();
  probe->Init(0);
  SchedSnapshot before, after;
  probe->Take(testing::CurrentTid(), &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // asleep: no run-queue wait
  probe->Take(testing::CurrentTid(), &after);
  const SchedPressure p = Compare(before, after);
  ASSERT_TRUE(p.has_run_delay);
  EXPECT_FALSE(p.starved) << Summary(p);
}

TEST(SchedPressure, MappedFileDroppedFromThePageCacheFaultsInThatMapping) {
  char path[] = "/var/tmp/hangwatch-fault.XXXXXX";  // on disk: tmpfs pages cannot be dropped
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const size_t size = 16 << 20;
  std::vector<char> block(1 << 20, 'x');
  for (size_t at = 0; at < size; at += block.size()) {
    ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  }
  ASSERT_EQ(fsync(fd), 0);  // clean pages: DONTNEED can drop them
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  char* map = static_cast<char*>(mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE(map, MAP_FAILED);
  madvise(map, size, MADV_RANDOM);  // one fault per page touched, no read-ahead around it

  auto scratch = std::make_unique<FaultScratch>();
  auto cold = std::make_unique<ColdMappings>();
  ColdFileMappings(1 << 20, scratch.get(), cold.get());
  bool listed = false;
  for (uint32_t i = 0; i < cold->count; ++i) listed |= std::string(cold->mappings[i].path) == path;
  EXPECT_TRUE(listed) << "the dropped file is not among the cold mappings";

  auto probe = std::make_unique<SchedProbe>();
  probe->Init(0);
  SchedSnapshot before, after;
  probe->Take(testing::CurrentTid(), &before);
  volatile char sum = 0;
  for (size_t at = 0; at < size; at += 4096) sum = sum + map[at];
  probe->Take(testing::CurrentTid(), &after);
  const SchedPressure p = Compare(before, after);
  ASSERT_TRUE(p.has_faults);
  EXPECT_GT(p.major_faults, 0u) << Summary(p);
  EXPECT_NE(Summary(p).find("major fault"), std::string::npos);

  MappingInfo where;
  ASSERT_TRUE(FindMapping(0, reinterpret_cast<uintptr_t>(map) + 4096 * 7, scratch.get(), &where));
  EXPECT_STREQ(where.path, path);
  EXPECT_EQ(where.lo, reinterpret_cast<uintptr_t>(map));
  char text[512];
  FormatFaultSummary(p.major_faults, &where, text, sizeof text);
  EXPECT_NE(std::string(text).find(std::string(" major faults in ") + path), std::string::npos)
      << text;
  FormatFaultSummary(3, nullptr, text, sizeof text);
  EXPECT_STREQ(text, "3 major faults (mapping unknown)");
  EXPECT_FALSE(FindMapping(0, 0x10, scratch.get(), &where));
  munmap(map, size);
  close(fd);
  unlink(path);
}

// A child limited to 10 % of a CPU by a cgroup of its own (v1 cpu controller or v2), busy.
TEST(SchedPressure, ChildInACpuLimitedCgroupIsThrottled) {
  testing::CpuQuotaCgroup cgroup("hangwatch-cause-test-" + std::to_string(getpid()));
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.why();
  ASSERT_TRUE(cgroup.Limit(10000, 100000));
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  if (child == 0) {
    char c;
    (void)!read(go[0], &c, 1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    _exit(0);
  }
  const bool joined = cgroup.Join(child);
  auto probe = std::make_unique<SchedProbe>();
  probe->Init(child);
  EXPECT_NE(std::string(probe->cpu_stat_path()).find("hangwatch-cause-test-"), std::string::npos)
      << probe->cpu_stat_path();
  SchedSnapshot before, after;
  probe->Take(child, &before);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  // Throttling shows after the first periods (100 ms each): wait for it, bounded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  SchedPressure p;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    probe->Take(child, &after);
    p = Compare(before, after);
    // (The throttled time is added when a throttled period ends: wait for that too.)
  } while ((!p.throttled || p.throttled_usec == 0) && std::chrono::steady_clock::now() < deadline);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);  // the cgroup, now empty, is removed at the end
  ASSERT_TRUE(joined);
  ASSERT_TRUE(p.has_cgroup);
  EXPECT_TRUE(p.throttled) << Summary(p);
  EXPECT_GT(p.throttled_usec, 0u);
  EXPECT_NE(Summary(p).find("throttled: the cgroup's CPU quota stopped it"), std::string::npos)
      << Summary(p);
}

TEST(KernelWait, SleepingThreadHasItsWchan) {
  std::atomic<pid_t> tid{0};
  std::thread sleeper([&] {
    tid = testing::CurrentTid();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
  });
  while (tid == 0) std::this_thread::yield();
  unwind::TaskSyscall call;
  ASSERT_TRUE(testing::WaitForSyscall(0, tid, {SYS_clock_nanosleep, SYS_nanosleep}, &call));
  KernelWait w;
  ASSERT_TRUE(ReadKernelWait(0, tid, &w));
  EXPECT_EQ(w.state, 'S');
  EXPECT_FALSE(w.d_state);
  EXPECT_NE(std::string(w.wchan), "") << "wchan hidden";
  if (w.stack_readable) {
    EXPECT_GT(w.stack_frames, 0);
    EXPECT_NE(std::string(w.stack).find("nanosleep"), std::string::npos) << w.stack;
  }
  sleeper.join();
}

TEST(SchedPressureBadInput, DeadThreadGivesEmptySnapshots) {
  auto probe = std::make_unique<SchedProbe>();
  probe->Init(0);
  SchedSnapshot a, b;
  probe->Take(99'999'999, &a);
  probe->Take(99'999'999, &b);
  EXPECT_FALSE(a.has_schedstat);
  EXPECT_FALSE(a.has_stat);
  const SchedPressure p = Compare(a, b);
  EXPECT_FALSE(p.has_run_delay);
  EXPECT_FALSE(p.starved);
  EXPECT_FALSE(p.has_faults);
  KernelWait w;
  EXPECT_FALSE(ReadKernelWait(0, 99'999'999, &w));
  auto other = std::make_unique<SchedProbe>();
  other->Init(99'999'999);  // no such process: no cgroup, still usable
  EXPECT_STREQ(other->cpu_stat_path(), "");
}

}  // namespace
}  // namespace hangwatch::cause
