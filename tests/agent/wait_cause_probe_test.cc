// The Linux WaitCauseProbe on real threads: a lock sample, its owner captured, allocates
// nothing (the watchdog's rule after Start()), nor does a hang on a pipe (its other end looked
// for in /proc, the scheduling counters at its start and end); a running thread gives no cause;
// a sample in restart_syscall is decoded as the call it restarted.
#include "agent/samplers/wait_cause_probe.h"
#include "tests/keep_frame.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "tests/agent/e2e_util.h"
#include "unwind/proc_blocked_reader.h"

// Counts every operator new of the test binary. The replacements pair malloc with free; GCC
// cannot see that new and delete are both ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace hangwatch::agent {
namespace {

using namespace std::chrono_literals;

class ProcCapturer final : public OtherThreadCapturer {
 public:
  size_t CaptureOther(const unwind::ThreadInfo& thread, uintptr_t* frames, FrameMethod* methods,
                      size_t max_frames, SampledThread* sampled) override {
    const unwind::CaptureStatus status = sampler_.Capture(thread, &buffer_);
    *sampled = SampledThread{};
    sampled->state = buffer_.sched_state;
    if (status != unwind::CaptureStatus::kOk) return 0;
    sampled->syscall_known = buffer_.syscall_known;
    sampled->syscall_nr = buffer_.syscall_nr;
    sampled->syscall_args = buffer_.syscall_args;
    sampled->sp = buffer_.regs.sp;
    const size_t n = std::min(buffer_.num_frames, max_frames);
    std::copy_n(buffer_.frames(), n, frames);
    std::fill_n(methods, n, FrameMethod::kPc);
    return n;
  }

 private:
  unwind::ProcFirstSampler sampler_{nullptr};
  unwind::CaptureBuffer buffer_{64, 16 * 1024};
};

HW_TEST_KEEP_FRAME void HoldAndSleep(const std::atomic<bool>* release) {
  while (!release->load()) {
    timespec ts{0, 200'000'000};
    nanosleep(&ts, nullptr);
  }
}

TEST(WaitCauseProbeTest, ALockSampleWithItsOwnerAllocatesNothing) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  auto probe = MakeLinuxWaitCauseProbe();
  ProcCapturer capturer;
  auto cause = std::make_unique<WaitCause>();
  std::mutex m;
  std::atomic<bool> held{false}, release{false};
  std::atomic<pid_t> owner_tid{0};
  unwind::ThreadInfo waiter_info;
  std::atomic<bool> registered{false};
  std::thread owner([&] {
    owner_tid = static_cast<pid_t>(syscall(SYS_gettid));
    std::lock_guard<std::mutex> g(m);
    held = true;
    HoldAndSleep(&release);
  });
  while (!held) std::this_thread::sleep_for(1ms);
  std::thread waiter([&] {
    unwind::RegisterCurrentThread(&waiter_info);
    registered = true;
    std::lock_guard<std::mutex> g(m);
  });
  while (!registered) std::this_thread::sleep_for(1ms);
  // Until the waiter sleeps on the lock and the probe names the owner.
  SampledThread sampled;
  sampled.state = 'S';
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline &&
         !(probe->Probe(waiter_info, sampled, &capturer, cause.get()) &&
           cause->kind == CauseKind::kLock && cause->num_threads == 1)) {
    std::this_thread::sleep_for(1ms);
  }
  const uint64_t before = g_allocations.load();
  int named = 0, captured = 0, in_sleep = 0;
  for (int i = 0; i < 100; ++i) {
    probe->Probe(waiter_info, sampled, &capturer, cause.get());
    named += cause->kind == CauseKind::kLock && cause->owner_tid() == owner_tid;
    // The owner wakes every 200 ms: a probe then finds it running (no stack: no fallback here).
    captured += cause->threads[0].num_frames > 0;
    in_sleep += std::strncmp(cause->threads[0].call.text, "clock_nanosleep(", 16) == 0;
  }
  const uint64_t after = g_allocations.load();
  release = true;
  owner.join();
  waiter.join();
  EXPECT_EQ(after - before, 0u) << "the probe allocated";
  EXPECT_EQ(named, 100);
  EXPECT_GE(captured, 90) << "the owner was captured";
  EXPECT_GE(in_sleep, 90) << "and found in its sleep";
}

TEST(WaitCauseProbeTest, AHangOnAPipeAllocatesNothingAndNamesItsWriter) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  auto probe = MakeLinuxWaitCauseProbe();
  auto cause = std::make_unique<WaitCause>();
  auto end_cause = std::make_unique<WaitCause>();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  unwind::ThreadInfo reader_info;
  std::atomic<bool> registered{false};
  std::thread reader([&] {
    unwind::RegisterCurrentThread(&reader_info);
    registered = true;
    char c;
    (void)!read(fds[0], &c, 1);
  });
  while (!registered) std::this_thread::sleep_for(1ms);
  SampledThread sampled;
  sampled.state = 'S';
  // Until the reader sleeps in read() (a probe before that may see it running).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline &&
         !(probe->Probe(reader_info, sampled, nullptr, cause.get()) &&
           cause->kind == CauseKind::kIpc)) {
    std::this_thread::sleep_for(1ms);
  }
  const uint64_t before = g_allocations.load();
  probe->HangStarted(reader_info);  // what was described is forgotten: described again below
  int named = 0;
  for (int i = 0; i < 100; ++i) {
    probe->Probe(reader_info, sampled, nullptr, cause.get());
    named += cause->kind == CauseKind::kIpc && cause->num_fds == 1 && cause->fds[0] == fds[0] &&
             std::strncmp(cause->path, "pipe:[", 6) == 0 && cause->num_peers == 1 &&
             cause->peers[0].pid == getpid();
  }
  probe->HangEnded(reader_info, end_cause.get());
  const uint64_t after = g_allocations.load();
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(after - before, 0u) << "the probe allocated";
  // This process holds the write end (the reading descriptor itself is not a peer).
  EXPECT_EQ(named, 100) << cause->path;
}

// An owner asleep since its last capture is not captured again (its stack is the same); one that
// ran since is.
TEST(WaitCauseProbeTest, AThreadThatDidNotRunIsUnchangedSinceItsLastRead) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  unwind::ThreadInfo info;
  std::atomic<bool> registered{false};
  std::thread reader([&] {
    unwind::RegisterCurrentThread(&info);
    registered = true;
    char c;
    while (read(fds[0], &c, 1) == 1 && c != 'q') {
    }
  });
  while (!registered) std::this_thread::sleep_for(1ms);
  auto sampler = MakeLinuxOwnerSampler(nullptr);
  unwind::CaptureBuffer buffer(16, 4096);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (sampler->Capture(info, &buffer) != unwind::CaptureStatus::kOk &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  const bool same = sampler->UnchangedSinceLastRead(info);
  ASSERT_EQ(write(fds[1], "x", 1), 1);  // it runs, and reads again
  std::this_thread::sleep_for(50ms);
  const bool after_running = sampler->UnchangedSinceLastRead(info);
  unwind::ThreadInfo other = info;
  other.tid = info.tid + 100000;  // not the thread last read
  const bool other_thread = sampler->UnchangedSinceLastRead(other);
  ASSERT_EQ(write(fds[1], "q", 1), 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  EXPECT_TRUE(same);
  EXPECT_FALSE(after_running);
  EXPECT_FALSE(other_thread);
}

// The syscall line of thread `tid` once it sleeps in call `nr` (fields 0 after 10 s).
unwind::TaskSyscall WaitForCall(pid_t tid, int64_t nr) {
  unwind::TaskSyscall sys;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    char path[64];
    char buf[256];
    unwind::TaskPath(0, tid, "syscall", path, sizeof(path));
    const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
    if (n > 0 && unwind::ParseTaskSyscall(buf, static_cast<size_t>(n), &sys) && sys.fields == 9 &&
        sys.nr == nr) {
      return sys;
    }
    std::this_thread::sleep_for(1ms);
  }
  return unwind::TaskSyscall{};
}

// What a sample of a thread asleep in `sys` saw, with the number `nr` in place of the call's.
SampledThread SampleAs(const unwind::TaskSyscall& sys, int64_t nr) {
  SampledThread s;
  s.state = 'S';
  s.syscall_known = true;
  s.syscall_nr = nr;
  s.syscall_args = sys.args;
  return s;
}

// A timed lock that a stop restarted reads restart_syscall with the futex call's arguments. A
// probe that never saw the call tells it from the thread's kernel wait (a futex wait) and still
// names the owner. The waiter here sleeps in the futex call itself, whose kernel wait is the
// same: the sample is given restart_syscall's number.
TEST(WaitCauseProbeTest, ARestartedTimedLockIsToldByItsKernelWait) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  ProcCapturer capturer;
  auto cause = std::make_unique<WaitCause>();
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<bool> held{false}, release{false};
  std::atomic<pid_t> owner_tid{0}, waiter_tid{0};
  std::thread owner([&] {
    owner_tid = static_cast<pid_t>(syscall(SYS_gettid));
    pthread_mutex_lock(&m);
    held = true;
    HoldAndSleep(&release);
    pthread_mutex_unlock(&m);
  });
  while (!held) std::this_thread::sleep_for(1ms);
  unwind::ThreadInfo waiter_info;
  std::thread waiter([&] {
    unwind::RegisterCurrentThread(&waiter_info);
    waiter_tid = static_cast<pid_t>(syscall(SYS_gettid));
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    if (pthread_mutex_timedlock(&m, &deadline) == 0) pthread_mutex_unlock(&m);
  });
  while (waiter_tid == 0) std::this_thread::sleep_for(1ms);
  const unwind::TaskSyscall line = WaitForCall(waiter_tid, SYS_futex);
  bool probed = false;
  if (line.fields == 9) {
    auto probe = MakeLinuxWaitCauseProbe();
    probe->HangStarted(waiter_info);
    probed = probe->Probe(waiter_info, SampleAs(line, SYS_restart_syscall), &capturer, cause.get());
  }
  release = true;
  owner.join();
  waiter.join();
  ASSERT_EQ(line.fields, 9) << "the waiter never slept in futex";
  ASSERT_TRUE(probed);
  EXPECT_EQ(cause->kind, CauseKind::kLock) << cause->call.text;
  EXPECT_EQ(cause->lock.addr, reinterpret_cast<uint64_t>(&m));
  EXPECT_EQ(cause->owner_tid(), owner_tid);
  EXPECT_EQ(std::strncmp(cause->call.text, "futex(", 6), 0) << cause->call.text;
}

// A call seen earlier in the hang is what a restart_syscall with its arguments restarted, even
// where the kernel wait tells nothing. A read on a pipe stands for such a call (a read is not
// restarted this way, and its kernel wait says no futex, poll or sleep): a probe that saw it
// names it after the restart; one that did not, or that forgot it at a new hang's start, or a
// restart with other arguments, does not.
TEST(WaitCauseProbeTest, ARestartedCallSeenBeforeIsThatCall) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  auto cause = std::make_unique<WaitCause>();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  unwind::ThreadInfo reader_info;
  std::atomic<pid_t> reader_tid{0};
  std::thread reader([&] {
    unwind::RegisterCurrentThread(&reader_info);
    reader_tid = static_cast<pid_t>(syscall(SYS_gettid));
    char c;
    (void)!read(fds[0], &c, 1);
  });
  while (reader_tid == 0) std::this_thread::sleep_for(1ms);
  const unwind::TaskSyscall line = WaitForCall(reader_tid, SYS_read);
  CauseKind seen = CauseKind::kNone, restarted = CauseKind::kNone, never_seen = CauseKind::kNone,
            forgotten = CauseKind::kNone, other_args = CauseKind::kNone;
  char restarted_call[sizeof(cause->call.text)] = {};
  if (line.fields == 9) {
    auto probe = MakeLinuxWaitCauseProbe();
    probe->HangStarted(reader_info);
    probe->Probe(reader_info, SampleAs(line, SYS_read), nullptr, cause.get());
    seen = cause->kind;
    probe->Probe(reader_info, SampleAs(line, SYS_restart_syscall), nullptr, cause.get());
    restarted = cause->kind;
    std::memcpy(restarted_call, cause->call.text, sizeof(restarted_call));
    unwind::TaskSyscall moved = line;
    moved.args[2] += 1;
    probe->Probe(reader_info, SampleAs(moved, SYS_restart_syscall), nullptr, cause.get());
    other_args = cause->kind;
    probe->HangStarted(reader_info);
    probe->Probe(reader_info, SampleAs(line, SYS_restart_syscall), nullptr, cause.get());
    forgotten = cause->kind;
    auto fresh = MakeLinuxWaitCauseProbe();
    fresh->HangStarted(reader_info);
    fresh->Probe(reader_info, SampleAs(line, SYS_restart_syscall), nullptr, cause.get());
    never_seen = cause->kind;
  }
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  ASSERT_EQ(line.fields, 9) << "the reader never slept in read";
  EXPECT_EQ(seen, CauseKind::kIpc);
  EXPECT_EQ(restarted, CauseKind::kIpc) << restarted_call;
  EXPECT_EQ(std::strncmp(restarted_call, "read(", 5), 0) << restarted_call;
  EXPECT_EQ(other_args, CauseKind::kOther);
  EXPECT_EQ(forgotten, CauseKind::kOther);
  EXPECT_EQ(never_seen, CauseKind::kOther);
}

}  // namespace
}  // namespace hangwatch::agent
