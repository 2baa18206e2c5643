#include "agent/core/watchdog_sleep.h"

#include <atomic>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#else
#include <chrono>
#include <condition_variable>
#include <mutex>
#endif

namespace hangwatch::agent {
namespace {
std::atomic<uint32_t> g_wakeups{0};
#if !defined(__linux__)
std::mutex g_mu;
std::condition_variable g_cv;
#endif
}  // namespace

uint32_t WatchdogWakeups() noexcept { return g_wakeups.load(std::memory_order_acquire); }

#if defined(__linux__)

void WatchdogSleepUntil(uint64_t deadline_ns, uint32_t seen) noexcept {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline: no drift across spurious
  // returns. It returns at once when the count is no longer `seen` (EAGAIN).
  const timespec deadline{static_cast<time_t>(deadline_ns / 1'000'000'000),
                          static_cast<long>(deadline_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wakeups), FUTEX_WAIT_BITSET_PRIVATE, seen,
          &deadline, nullptr, FUTEX_BITSET_MATCH_ANY);
}

void WakeWatchdog() noexcept {
  g_wakeups.fetch_add(1, std::memory_order_acq_rel);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wakeups), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

#else

void WatchdogSleepUntil(uint64_t deadline_ns, uint32_t seen) noexcept {
  const std::chrono::steady_clock::time_point when{std::chrono::nanoseconds(deadline_ns)};
  std::unique_lock<std::mutex> lock(g_mu);
  g_cv.wait_until(lock, when, [seen] { return g_wakeups.load() != seen; });
}

void WakeWatchdog() noexcept {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_wakeups.fetch_add(1, std::memory_order_acq_rel);
  }
  g_cv.notify_all();
}

#endif

}  // namespace hangwatch::agent
