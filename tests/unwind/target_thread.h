// TargetThread: a thread for capture tests that registers itself, runs a given function and
// tells the test when it has reached the point to be captured. Synchronization is by atomics
// only (no sleeps): the test waits for `Ready()`, captures, then releases the thread.
#ifndef HANGWATCH_TESTS_UNWIND_TARGET_THREAD_H_
#define HANGWATCH_TESTS_UNWIND_TARGET_THREAD_H_

#include <atomic>
#include <functional>
#include <thread>

#include "unwind/thread_capture.h"

// ThreadSanitizer delivers an asynchronous signal only when the receiving thread next enters
// its runtime (an instrumented call or an interceptor), with the registers of an earlier point.
// A target spinning in uninstrumented code, or blocked in a call TSan does not treat as blocking
// (read, pthread_mutex_lock), never answers, and captured frames are not where the thread is.
// Tests that depend on prompt, exact delivery skip themselves under TSan; the stress test (the
// point of a TSan run: no race, no deadlock) does not.
#if defined(__SANITIZE_THREAD__)
#define HW_TEST_SKIP_UNDER_TSAN() \
  GTEST_SKIP() << "ThreadSanitizer defers asynchronous signals (see target_thread.h)"
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HW_TEST_SKIP_UNDER_TSAN() \
  GTEST_SKIP() << "ThreadSanitizer defers asynchronous signals (see target_thread.h)"
#endif
#endif
#if !defined(HW_TEST_SKIP_UNDER_TSAN)
#define HW_TEST_SKIP_UNDER_TSAN() \
  do {                            \
  } while (false)
#endif

namespace hangwatch::unwind::testing {

// The handshake between a test and the thread it captures: the target says when it is where
// the test wants it (SignalReady), and spins until told to stop.
class SpinControl {
 public:
  void SignalReady() { ready_.store(true, std::memory_order_release); }
  bool IsReady() const { return ready_.load(std::memory_order_acquire); }
  void Stop() {
    stop_.store(true, std::memory_order_release);
    __atomic_store_n(&stop_plain_, true, __ATOMIC_RELEASE);
  }
  bool ShouldStop() const { return stop_.load(std::memory_order_acquire); }
  // The stop flag as plain storage, for spin loops that must not call anything.
  const bool* stop_flag() const { return &stop_plain_; }
  const std::atomic<bool>& ready_flag() const { return ready_; }

 private:
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_{false};
  bool stop_plain_ = false;  // mirrors stop_, written and read with __atomic builtins only
};

class TargetThread : public SpinControl {
 public:
  // Starts a thread that registers itself and then runs body(this). The body calls
  // SignalReady() when it is where the test wants it, and should return once ShouldStop().
  explicit TargetThread(std::function<void(TargetThread*)> body);
  ~TargetThread();  // Stop() + join

  // Blocks until the body called SignalReady(). Returns the registered thread.
  const ThreadInfo& WaitReady();
  void Join();
  const ThreadInfo& info() const { return info_; }

 private:
  ThreadInfo info_;
  std::atomic<bool> registered_{false};
  std::thread thread_;
};

// Spins (with a CPU pause) until the flag is set. For waits on events that are known to come.
void SpinUntil(const std::atomic<bool>& flag);

}  // namespace hangwatch::unwind::testing

#endif  // HANGWATCH_TESTS_UNWIND_TARGET_THREAD_H_
