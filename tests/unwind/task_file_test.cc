// unwind/internal/task_file.h: cached /proc/self/task/TID files and the scheduler state read
// from them.
#include "unwind/internal/task_file.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/unwind/target_thread.h"

namespace hangwatch::unwind::internal {
namespace {

using testing::TargetThread;

// The letter from stat, read independently of the code under test.
char StatLetter(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = fopen(path, "r");
  if (f == nullptr) return '?';
  char buf[512] = {};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  const char* close_paren = strrchr(buf, ')');
  return n > 0 && close_paren != nullptr ? close_paren[2] : '?';
}

// Waits (bounded) until the kernel reports the thread asleep: it reaches read() some time after
// signalling that it is about to.
bool WaitUntilAsleep(pid_t tid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (StatLetter(tid) == 'S') return true;
    std::this_thread::yield();
  }
  return false;
}

TEST(ReadSchedStateTest, SpinningThreadIsRunning) {
  TargetThread target([](TargetThread* t) {
    t->SignalReady();
    while (!t->ShouldStop()) {
    }
  });
  const pid_t tid = target.WaitReady().tid;
  SchedStateFiles files;
  EXPECT_EQ(ReadSchedState(tid, &files), 'R');
  char buf[256];
  ASSERT_GT(files.syscall.Read(tid, buf, sizeof(buf)), 0);
  EXPECT_EQ(std::string(buf, 7), "running");
}

TEST(ReadSchedStateTest, ThreadBlockedInReadIsSleepingAndAgreesWithStat) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  TargetThread target([&](TargetThread* t) {
    t->SignalReady();
    char c;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
  });
  const pid_t tid = target.WaitReady().tid;
  ASSERT_TRUE(WaitUntilAsleep(tid));
  SchedStateFiles files;
  EXPECT_EQ(ReadSchedState(tid, &files), 'S');
  // The syscall line of a sleeping thread is its system call (read is 0 on x86_64, 63 on
  // aarch64), not "running".
  char buf[256];
  ASSERT_GT(files.syscall.Read(tid, buf, sizeof(buf)), 0);
  EXPECT_NE(std::string(buf, 7), "running");
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  target.Join();
  close(fds[0]);
  close(fds[1]);
}

TEST(ReadSchedStateTest, ExitedThreadIsUnknown) {
  pid_t tid = 0;
  std::thread t([&] { tid = gettid(); });
  t.join();
  // pthread_join returns when the kernel clears the thread id, a little before the task leaves
  // /proc (much later under qemu-user, whose host thread outlives the guest's): wait for it.
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (access(dir.c_str(), F_OK) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_NE(access(dir.c_str(), F_OK), 0) << dir << " still there";
  SchedStateFiles files;
  EXPECT_EQ(ReadSchedState(tid, &files), '?');
}

TEST(TaskFileTest, RereadsFreshTextThroughTheSameDescriptor) {
  TargetThread target([](TargetThread* t) {
    t->SignalReady();
    while (!t->ShouldStop()) std::this_thread::yield();
  });
  const ThreadInfo& info = target.WaitReady();
  TaskFile comm("comm");
  char buf[64];
  ASSERT_GT(comm.Read(info.tid, buf, sizeof(buf)), 0);
  ASSERT_EQ(pthread_setname_np(info.handle, "renamed-1"), 0);
  ASSERT_GT(comm.Read(info.tid, buf, sizeof(buf)), 0);
  EXPECT_STREQ(buf, "renamed-1\n");
  ASSERT_EQ(pthread_setname_np(info.handle, "renamed-2"), 0);
  ASSERT_GT(comm.Read(info.tid, buf, sizeof(buf)), 0);
  EXPECT_STREQ(buf, "renamed-2\n");
}

TEST(TaskFileTest, FollowsTheTidItIsAskedFor) {
  TaskFile comm("comm");
  char buf[64];
  for (const char* name : {"first-thread", "second-thread"}) {
    TargetThread target([](TargetThread* t) {
      t->SignalReady();
      while (!t->ShouldStop()) std::this_thread::yield();
    });
    const ThreadInfo& info = target.WaitReady();
    ASSERT_EQ(pthread_setname_np(info.handle, name), 0);
    ASSERT_GT(comm.Read(info.tid, buf, sizeof(buf)), 0);
    EXPECT_EQ(std::string(buf), std::string(name) + "\n");
  }
}

TEST(TaskFileTest, CutsTextToTheBufferAndFailsForNoThread) {
  TaskFile stat("stat");
  char small[8];
  EXPECT_EQ(stat.Read(gettid(), small, sizeof(small)), 7);
  EXPECT_EQ(strlen(small), 7u);
  EXPECT_EQ(stat.Read(0, small, sizeof(small)), -1);
  EXPECT_EQ(small[0], '\0');
}

}  // namespace
}  // namespace hangwatch::unwind::internal
