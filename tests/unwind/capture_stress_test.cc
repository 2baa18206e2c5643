// Captures must not perturb the target: blocking calls resume (SA_RESTART) with their normal
// results, and a target busy in malloc, locks and stdio survives 100,000 captures.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "tests/unwind/target_thread.h"
#include "unwind/signal_sampler.h"

using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::CaptureStatusName;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::ThreadInfo;
using hangwatch::unwind::testing::TargetThread;

namespace {

std::unique_ptr<SignalSampler> MakeSampler() {
  SignalSamplerOptions options;
  // Generous: these tests are about correctness under load (2 shared cores, sanitizers), not
  // latency; a timeout would be reported as a failure below anyway.
  options.timeout = std::chrono::seconds(2);
  std::string error;
  auto sampler = SignalSampler::Create(options, &error);
  EXPECT_NE(sampler, nullptr) << error;
  return sampler;
}

// Captures until the target is seen asleep in the kernel (state S), i.e. it has entered the
// blocking call. Returns false if it never does within `attempts`.
bool CaptureUntilAsleep(SignalSampler* sampler, const ThreadInfo& info, CaptureBuffer* buffer) {
  for (int i = 0; i < 100'000; ++i) {
    if (sampler->Capture(info, buffer) != CaptureStatus::kOk) {
      return false;
    }
    if (buffer->sched_state == 'S') {
      return true;
    }
    sched_yield();
  }
  return false;
}

TEST(CaptureStressTest, ReadOnAPipeResumesWithTheRightDataAndNoEintr) {
  HW_TEST_SKIP_UNDER_TSAN();
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string message = "hello from the other side";
  std::string received;
  int read_errno = 0;
  ssize_t read_result = -2;
  TargetThread target([&](TargetThread* t) {
    t->SignalReady();
    std::vector<char> buf(message.size());
    read_result = read(fds[0], buf.data(), buf.size());  // blocks until the test writes
    read_errno = errno;
    if (read_result > 0) {
      received.assign(buf.data(), static_cast<size_t>(read_result));
    }
  });
  const ThreadInfo& info = target.WaitReady();
  // Whatever happens below, let the target's read() finish so that it can be joined.
  struct Unblock {
    int fd;
    ~Unblock() {
      if (fd >= 0) {
        (void)!write(fd, "x", 1);
      }
    }
  } unblock_on_failure{fds[1]};
  CaptureBuffer buffer(256, 64 * 1024);
  ASSERT_TRUE(CaptureUntilAsleep(sampler.get(), info, &buffer));
  int asleep = 0;
  for (int i = 0; i < 1000; ++i) {
    const CaptureStatus status = sampler->Capture(info, &buffer);
    ASSERT_EQ(status, CaptureStatus::kOk) << CaptureStatusName(status);
    asleep += buffer.sched_state == 'S' ? 1 : 0;
  }
  EXPECT_GT(asleep, 0);
  ASSERT_EQ(write(fds[1], message.data(), message.size()), static_cast<ssize_t>(message.size()));
  target.Join();
  EXPECT_EQ(read_result, static_cast<ssize_t>(message.size())) << strerror(read_errno);
  EXPECT_NE(read_errno, EINTR);
  EXPECT_EQ(received, message);
  close(fds[0]);
  close(fds[1]);
}

TEST(CaptureStressTest, MutexLockIsAcquiredNormally) {
  HW_TEST_SKIP_UNDER_TSAN();
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ASSERT_EQ(pthread_mutex_lock(&mutex), 0);
  std::atomic<bool> released{false};
  std::atomic<bool> acquired_before_release{false};
  int lock_result = -1;
  TargetThread target([&](TargetThread* t) {
    t->SignalReady();
    lock_result = pthread_mutex_lock(&mutex);  // blocks until the test unlocks
    if (!released.load()) {
      acquired_before_release.store(true);
    }
    pthread_mutex_unlock(&mutex);
  });
  const ThreadInfo& info = target.WaitReady();
  // Whatever happens below, let the target acquire the lock so that it can be joined.
  struct Unlock {
    pthread_mutex_t* mutex;
    ~Unlock() {
      if (mutex != nullptr) {
        pthread_mutex_unlock(mutex);
      }
    }
  } unlock_on_failure{&mutex};
  CaptureBuffer buffer(256, 64 * 1024);
  ASSERT_TRUE(CaptureUntilAsleep(sampler.get(), info, &buffer));
  for (int i = 0; i < 1000; ++i) {
    const CaptureStatus status = sampler->Capture(info, &buffer);
    ASSERT_EQ(status, CaptureStatus::kOk) << CaptureStatusName(status);
  }
  released.store(true);
  unlock_on_failure.mutex = nullptr;
  ASSERT_EQ(pthread_mutex_unlock(&mutex), 0);
  target.Join();
  EXPECT_EQ(lock_result, 0);
  EXPECT_FALSE(acquired_before_release.load());
}

// Number of captures; HANGWATCH_STRESS_CAPTURES overrides it (e.g. for a quick local run).
int StressCaptures() {
  const char* env = getenv("HANGWATCH_STRESS_CAPTURES");
  return env != nullptr ? atoi(env) : 100'000;
}

TEST(CaptureStressTest, TargetHammeringMallocLocksAndStdioSurvives) {
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  FILE* sink = fopen("/dev/null", "w");
  ASSERT_NE(sink, nullptr);
  std::mutex mutex;
  std::atomic<uint64_t> iterations{0};
  TargetThread target([&](TargetThread* t) {
    t->SignalReady();
    uint64_t n = 0;
    std::vector<void*> live(64, nullptr);
    while (!t->ShouldStop()) {
      const size_t slot = n % live.size();
      free(live[slot]);
      live[slot] = malloc(16 + (n * 7919) % 4096);
      {
        std::lock_guard<std::mutex> lock(mutex);
        fprintf(sink, "iteration %llu %p\n", static_cast<unsigned long long>(n), live[slot]);
      }
      char line[64];
      snprintf(line, sizeof(line), "%llu", static_cast<unsigned long long>(n));
      std::string copy(line);  // operator new, too
      if (n % 256 == 0) {
        fflush(sink);
      }
      iterations.store(++n, std::memory_order_relaxed);
    }
    for (void* p : live) {
      free(p);
    }
  });
  const ThreadInfo& info = target.WaitReady();
  CaptureBuffer buffer(256, 64 * 1024);
  const int captures = StressCaptures();
  uint64_t last_iterations = 0;
  int progressed = 0;
  for (int i = 0; i < captures; ++i) {
    const CaptureStatus status = sampler->Capture(info, &buffer);
    ASSERT_EQ(status, CaptureStatus::kOk) << "capture " << i << ": " << CaptureStatusName(status);
    ASSERT_GE(buffer.num_frames, 1u);
    // The sampler thread takes the same locks in between: a deadlock would show up as a hang.
    if (i % 1000 == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      fprintf(sink, "sampler %d\n", i);
      const uint64_t now = iterations.load(std::memory_order_relaxed);
      progressed += now != last_iterations ? 1 : 0;
      last_iterations = now;
    }
  }
  target.Stop();
  target.Join();
  fclose(sink);
  EXPECT_GT(iterations.load(), 0u);
  EXPECT_GT(progressed, 0);
}

}  // namespace
