// The Linux WaitCauseProbe on real threads: a lock sample, its owner captured, allocates
// nothing (the watchdog's rule after Start()), nor does a hang on a pipe (its other end looked
// for in /proc, the scheduling counters at its start and end); a running thread gives no cause.
#include "agent/wait_cause_probe.h"
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

}  // namespace
}  // namespace hangwatch::agent
