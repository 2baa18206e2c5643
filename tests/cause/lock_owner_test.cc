// cause/lock_owner.h and cause/syscall_decode.h on real threads of this process: a thread
// blocked on each kind of lock held by another, read from /proc and the lock's memory.
#include "cause/lock_owner.h"
#include "tests/keep_frame.h"

#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#include "cause/child_wait.h"
#include "cause/syscall_decode.h"
#include "tests/deny_syscall.h"
#include "unwind/self_memory.h"

namespace hangwatch::cause {
namespace {

using namespace std::chrono_literals;

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Waits (10 s at most) until thread `tid` sleeps in a call of kind `want`.
bool WaitForCall(pid_t tid, SyscallWait want, DecodedWait* out) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    *out = ReadThreadWait(tid);
    if (out->wait == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// The owner's body while it holds the lock: asleep in nanosleep until released.
HW_TEST_KEEP_FRAME void HoldAndSleep(const std::atomic<bool>* release) {
  while (!release->load()) {
    timespec ts{0, 2'000'000};
    nanosleep(&ts, nullptr);
  }
}

std::string NameOf(pid_t tid) {
  char name[16];
  if (!ReadThreadName(tid, name, sizeof(name))) return "";
  return name;
}

struct Outcome {
  LockInfo lock;
  pid_t owner_tid = 0;
  pid_t waiter_tid = 0;
};

// An owner thread named "db-writer" takes the lock and sleeps in HoldAndSleep; a waiter asks
// for it; the waiter's futex wait is resolved while both are there.
Outcome OwnerAndWaiter(const std::function<void()>& owner_lock,
                       const std::function<void()>& owner_unlock,
                       const std::function<void()>& waiter_lock,
                       const std::function<void()>& waiter_unlock) {
  Outcome o;
  std::atomic<bool> held{false}, release{false};
  std::atomic<pid_t> owner_tid{0}, waiter_tid{0};
  std::thread owner([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    owner_tid = Tid();
    owner_lock();
    held = true;
    HoldAndSleep(&release);
    owner_unlock();
  });
  while (!held) std::this_thread::sleep_for(1ms);
  std::thread waiter([&] {
    waiter_tid = Tid();
    waiter_lock();
    waiter_unlock();
  });
  while (waiter_tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  const bool waiting = WaitForCall(waiter_tid, SyscallWait::kFutex, &w);
  if (waiting) o.lock = ResolveFutexWait(w);
  o.owner_tid = owner_tid;
  o.waiter_tid = waiter_tid;
  release = true;
  owner.join();
  waiter.join();
  EXPECT_TRUE(waiting) << "the waiter never slept on the lock";
  return o;
}

TEST(LockOwnerTest, StdMutexNamesItsOwner) {
  std::mutex m;
  const Outcome o = OwnerAndWaiter([&] { m.lock(); }, [&] { m.unlock(); }, [&] { m.lock(); },
                                   [&] { m.unlock(); });
  EXPECT_EQ(o.lock.type, LockType::kMutex);
  EXPECT_EQ(o.lock.addr, reinterpret_cast<uint64_t>(&m));
  EXPECT_EQ(o.lock.owner, o.owner_tid);
}

TEST(LockOwnerTest, OwnerThreadNameIsRead) {
  std::atomic<bool> release{false};
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    tid = Tid();
    HoldAndSleep(&release);
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(NameOf(tid), "db-writer");
  EXPECT_TRUE(IsThreadOfThisProcess(tid));
  release = true;
  t.join();
  EXPECT_FALSE(IsThreadOfThisProcess(0));
}

TEST(LockOwnerTest, RecursiveMutex) {
  std::recursive_mutex m;
  const Outcome o = OwnerAndWaiter(
      [&] {
        m.lock();
        m.lock();
      },
      [&] {
        m.unlock();
        m.unlock();
      },
      [&] { m.lock(); }, [&] { m.unlock(); });
  EXPECT_EQ(o.lock.type, LockType::kRecursiveMutex);
  EXPECT_EQ(o.lock.owner, o.owner_tid);
}

// A pthread mutex with the given attributes.
class AttrMutex {
 public:
  explicit AttrMutex(const std::function<void(pthread_mutexattr_t*)>& set) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    set(&a);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  ~AttrMutex() { pthread_mutex_destroy(&m_); }
  pthread_mutex_t* get() { return &m_; }

 private:
  pthread_mutex_t m_;
};

TEST(LockOwnerTest, ErrorCheckingAndAdaptiveMutexes) {
  for (int kind : {PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP}) {
    AttrMutex m([&](pthread_mutexattr_t* a) { pthread_mutexattr_settype(a, kind); });
    const Outcome o = OwnerAndWaiter(
        [&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); },
        [&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); });
    EXPECT_EQ(o.lock.type, kind == PTHREAD_MUTEX_ERRORCHECK ? LockType::kErrorCheckMutex
                                                            : LockType::kAdaptiveMutex);
    EXPECT_EQ(o.lock.owner, o.owner_tid);
  }
}

TEST(LockOwnerTest, PriorityInheritanceMutex) {
  AttrMutex m(
      [](pthread_mutexattr_t* a) { pthread_mutexattr_setprotocol(a, PTHREAD_PRIO_INHERIT); });
  const Outcome o =
      OwnerAndWaiter([&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); },
                     [&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); });
  EXPECT_EQ(o.lock.type, LockType::kPiMutex);
  EXPECT_EQ(o.lock.owner, o.owner_tid);
}

TEST(LockOwnerTest, RobustMutex) {
  AttrMutex m([](pthread_mutexattr_t* a) { pthread_mutexattr_setrobust(a, PTHREAD_MUTEX_ROBUST); });
  const Outcome o =
      OwnerAndWaiter([&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); },
                     [&] { pthread_mutex_lock(m.get()); }, [&] { pthread_mutex_unlock(m.get()); });
  EXPECT_EQ(o.lock.type, LockType::kRobustMutex);
  EXPECT_EQ(o.lock.owner, o.owner_tid);
}

TEST(LockOwnerTest, SharedMutexHeldForWritingNamesTheWriter) {
  std::shared_mutex m;
  // A reader waiting for the writer, then a writer waiting for it.
  Outcome o = OwnerAndWaiter([&] { m.lock(); }, [&] { m.unlock(); }, [&] { m.lock_shared(); },
                             [&] { m.unlock_shared(); });
  EXPECT_EQ(o.lock.type, LockType::kRwlock);
  EXPECT_EQ(o.lock.addr, reinterpret_cast<uint64_t>(&m));
  EXPECT_EQ(o.lock.owner, o.owner_tid);
  o = OwnerAndWaiter([&] { m.lock(); }, [&] { m.unlock(); }, [&] { m.lock(); },
                     [&] { m.unlock(); });
  EXPECT_EQ(o.lock.type, LockType::kRwlock);
  EXPECT_EQ(o.lock.owner, o.owner_tid);
}

TEST(LockOwnerTest, ConditionVariableHasNoOwner) {
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = Tid();
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return ready; });
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  ASSERT_TRUE(WaitForCall(tid, SyscallWait::kFutex, &w));
  const LockInfo info = ResolveFutexWait(w);
  {
    std::lock_guard<std::mutex> lk(m);
    ready = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_EQ(info.type, LockType::kConditionVariable);
  EXPECT_EQ(info.addr, reinterpret_cast<uint64_t>(&cv));
  EXPECT_EQ(info.owner, 0);
}

TEST(LockOwnerTest, SemaphoreHasNoOwner) {
  sem_t sem;
  ASSERT_EQ(sem_init(&sem, 0, 0), 0);
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = Tid();
    while (sem_wait(&sem) != 0) {
    }
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  ASSERT_TRUE(WaitForCall(tid, SyscallWait::kFutex, &w));
  const LockInfo info = ResolveFutexWait(w);
  sem_post(&sem);
  waiter.join();
  sem_destroy(&sem);
  EXPECT_EQ(info.type, LockType::kSemaphore);
  EXPECT_EQ(info.addr, reinterpret_cast<uint64_t>(&sem));
  EXPECT_EQ(info.owner, 0);
}

// A semaphore with zeroed bytes before and after it (as on a fresh stack; ThreadSanitizer's
// build lays SemaphoreHasNoOwner's stack out so): those bytes pass for an rwlock's around its
// word, but a semaphore's waiter expects 0 where an rwlock's expects 2 or 3.
TEST(LockOwnerTest, SemaphoreAmidZeroedBytesIsNoRwlock) {
  struct alignas(16) {
    char before[16];
    sem_t sem;
    char after[64];
  } zeroed{};
  ASSERT_EQ(sem_init(&zeroed.sem, 0, 0), 0);
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = Tid();
    while (sem_wait(&zeroed.sem) != 0) {
    }
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  ASSERT_TRUE(WaitForCall(tid, SyscallWait::kFutex, &w));
  const LockInfo info = ResolveFutexWait(w);
  sem_post(&zeroed.sem);
  waiter.join();
  sem_destroy(&zeroed.sem);
  EXPECT_EQ(info.type, LockType::kSemaphore);
  EXPECT_EQ(info.addr, reinterpret_cast<uint64_t>(&zeroed.sem));
}

// A futex that is no lock: a word of 2 next to a number that is not a thread of this process,
// and an address that is not mapped. No owner, no crash.
TEST(LockOwnerTest, UnknownFutexAndUnmappedAddressGiveNoOwner) {
  alignas(8) static int32_t fake[8] = {2, 0, 0x3ffffff0, 1, 0, 0, 0, 0};
  DecodedWait w;
  w.wait = SyscallWait::kFutex;
  w.futex_addr = reinterpret_cast<uint64_t>(&fake[0]);
  w.futex_op = 128;  // FUTEX_WAIT_PRIVATE
  w.futex_val = 2;
  LockInfo info = ResolveFutexWait(w);
  EXPECT_EQ(info.owner, 0);
  EXPECT_TRUE(info.owner_released) << "an owner that is no thread of ours is given up";
  w.futex_addr = 8;  // never mapped
  info = ResolveFutexWait(w);
  EXPECT_EQ(info.type, LockType::kUnknown);
  EXPECT_EQ(info.owner, 0);
  w.futex_addr = 6;  // PI, unmapped: the word cannot be read
  w.futex_op = 6;
  info = ResolveFutexWait(w);
  EXPECT_EQ(info.owner, 0);
}

// Where process_vm_readv is refused (a seccomp policy; qemu-user does not implement it), the
// lock word is read through /proc/self/mem (unwind/self_memory.h): the owner is still named.
// In a forked child, the filter being irreversible; its exit status is the first check failed.
TEST(LockWordReadTest, OwnerIsNamedWhereProcessVmReadvIsRefused) {
  const pid_t child = fork();
  if (child == 0) {
    if (!testing::DenySyscall(SYS_process_vm_readv, EPERM)) _exit(100);
    if (unwind::PrepareSelfMemory() != unwind::SelfMemoryMethod::kProcSelfMem) _exit(101);
    std::mutex m;
    const Outcome o = OwnerAndWaiter([&] { m.lock(); }, [&] { m.unlock(); }, [&] { m.lock(); },
                                     [&] { m.unlock(); });
    if (o.lock.type != LockType::kMutex) _exit(102);
    _exit(o.lock.owner == o.owner_tid ? 0 : 103);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// waiter -> A held by t2 -> B held by t3 (asleep in HoldAndSleep).
TEST(LockOwnerTest, ChainOfTwoLocksAcrossThreeThreads) {
  std::mutex a, b;
  std::atomic<bool> release{false}, t3_holds{false}, t2_holds{false};
  std::atomic<pid_t> t2{0}, t3{0}, t1{0};
  std::thread th3([&] {
    pthread_setname_np(pthread_self(), "journal");
    t3 = Tid();
    std::lock_guard<std::mutex> g(b);
    t3_holds = true;
    HoldAndSleep(&release);
  });
  while (!t3_holds) std::this_thread::sleep_for(1ms);
  std::thread th2([&] {
    pthread_setname_np(pthread_self(), "db-writer");
    t2 = Tid();
    std::lock_guard<std::mutex> g(a);
    t2_holds = true;
    std::lock_guard<std::mutex> g2(b);
  });
  while (!t2_holds) std::this_thread::sleep_for(1ms);
  std::thread th1([&] {
    t1 = Tid();
    std::lock_guard<std::mutex> g(a);
  });
  while (t1 == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w, w2;
  const bool ok =
      WaitForCall(t1, SyscallWait::kFutex, &w) && WaitForCall(t2, SyscallWait::kFutex, &w2);
  WaitChain chain;
  // t3 wakes every 2 ms to look at `release`: on a loaded machine a read can find it awake
  // (runnable, no system call). The chain is read again until it finds t3 asleep (bounded).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ok) {
    chain = WaitChain{};
    FollowChain(t1, ResolveFutexWait(w), &chain);
    if ((chain.length == 2 && chain.links[1].wait.wait == SyscallWait::kSleep) ||
        std::chrono::steady_clock::now() > deadline) {
      break;
    }
  }
  release = true;
  th3.join();
  th2.join();
  th1.join();
  ASSERT_TRUE(ok);
  EXPECT_FALSE(chain.deadlock);
  ASSERT_EQ(chain.length, 2);
  EXPECT_EQ(chain.first.owner, t2);
  EXPECT_EQ(chain.links[0].tid, t2);
  EXPECT_STREQ(chain.links[0].name, "db-writer");
  EXPECT_EQ(chain.links[0].wants.addr, reinterpret_cast<uint64_t>(&b));
  EXPECT_EQ(chain.links[0].wants.owner, t3);
  EXPECT_EQ(chain.links[1].tid, t3);
  EXPECT_STREQ(chain.links[1].name, "journal");
  EXPECT_EQ(chain.links[1].wait.wait, SyscallWait::kSleep) << "t3 sleeps in nanosleep";
}

// Two threads, two mutexes, each holding one and wanting the other (timed locks, so that the
// test ends: each gives up after a few seconds).
TEST(LockOwnerTest, DeadlockOfTwoThreadsNamesBoth) {
  pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<int> holding{0};
  std::atomic<pid_t> t1{0}, t2{0};
  auto body = [&](pthread_mutex_t* mine, pthread_mutex_t* theirs, std::atomic<pid_t>* tid,
                  const char* name) {
    pthread_setname_np(pthread_self(), name);
    *tid = Tid();
    pthread_mutex_lock(mine);
    ++holding;
    while (holding < 2) std::this_thread::sleep_for(1ms);
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    if (pthread_mutex_timedlock(theirs, &deadline) == 0) pthread_mutex_unlock(theirs);
    pthread_mutex_unlock(mine);
  };
  std::thread th1(body, &a, &b, &t1, "left");
  std::thread th2(body, &b, &a, &t2, "right");
  while (t1 == 0 || t2 == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w1, w2;
  const bool ok =
      WaitForCall(t1, SyscallWait::kFutex, &w1) && WaitForCall(t2, SyscallWait::kFutex, &w2);
  WaitChain chain;
  if (ok) FollowChain(t1, ResolveFutexWait(w1), &chain);
  th1.join();
  th2.join();
  ASSERT_TRUE(ok);
  EXPECT_TRUE(chain.deadlock);
  EXPECT_EQ(chain.cycle_from, -1) << "the cycle comes back to the waiter";
  ASSERT_EQ(chain.length, 1);
  EXPECT_EQ(chain.first.addr, reinterpret_cast<uint64_t>(&b));
  EXPECT_EQ(chain.first.owner, t2);
  EXPECT_EQ(chain.links[0].tid, t2);
  EXPECT_STREQ(chain.links[0].name, "right");
  EXPECT_EQ(chain.links[0].wants.addr, reinterpret_cast<uint64_t>(&a));
  EXPECT_EQ(chain.links[0].wants.owner, t1);
}

TEST(SyscallDecodeTest, NanosleepIsASleepOfItsLength) {
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    tid = Tid();
    timespec ts{1, 0};
    nanosleep(&ts, nullptr);
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  const bool ok = WaitForCall(tid, SyscallWait::kSleep, &w);
  t.join();
  ASSERT_TRUE(ok);
  // glibc's nanosleep is clock_nanosleep(CLOCK_REALTIME, 0, req, rem).
  EXPECT_TRUE(std::strcmp(w.name, "clock_nanosleep") == 0 || std::strcmp(w.name, "nanosleep") == 0)
      << w.name;
  EXPECT_EQ(w.sleep_ns, 1'000'000'000u);
  char text[96];
  FormatCall(w, text, sizeof(text));
  EXPECT_NE(std::strstr(text, "nanosleep("), nullptr) << text;
}

TEST(SyscallDecodeTest, PollWithoutDescriptorsIsASleep) {
  unwind::TaskSyscall sys;
  sys.fields = 9;
  sys.nr = SYS_ppoll;
  sys.args[1] = 0;
  sys.args[2] = 0;
  DecodedWait w = DecodeWait(sys);
  EXPECT_EQ(w.wait, SyscallWait::kSleep);
  EXPECT_TRUE(w.sleep_forever);
  sys.args[1] = 3;
  w = DecodeWait(sys);
  EXPECT_EQ(w.wait, SyscallWait::kDescriptors);
  sys.nr = 100000;  // not a system call
  w = DecodeWait(sys);
  EXPECT_EQ(w.wait, SyscallWait::kUnknown);
  char text[96];
  FormatCall(w, text, sizeof(text));
  EXPECT_STREQ(text, "syscall 100000(0x0, 0x3, 0x0)");
}

HW_TEST_KEEP_FRAME void SleepOneSecondThenExit() {
  timespec ts{1, 0};
  nanosleep(&ts, nullptr);
  _exit(0);
}

TEST(ChildWaitTest, WaitpidNamesTheChildAndItsState) {
  const pid_t child = fork();
  if (child == 0) SleepOneSecondThenExit();
  ASSERT_GT(child, 0);
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    tid = Tid();
    int status = 0;
    waitpid(child, &status, 0);
  });
  while (tid == 0) std::this_thread::sleep_for(1ms);
  DecodedWait w;
  const bool ok = WaitForCall(tid, SyscallWait::kChild, &w);
  ChildInfo c;
  // Until the child is asleep in its nanosleep (just forked, it may still run).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ok && std::chrono::steady_clock::now() < deadline) {
    c = ResolveChildWait(tid, w);
    if (c.state == 'S') break;
    std::this_thread::sleep_for(1ms);
  }
  t.join();
  ASSERT_TRUE(ok);
  EXPECT_EQ(w.child, child);
  EXPECT_EQ(c.pid, child);
  EXPECT_FALSE(c.any);
  EXPECT_STREQ(c.name, "lock_owner_test");
  EXPECT_EQ(c.state, 'S');
}

}  // namespace
}  // namespace hangwatch::cause
