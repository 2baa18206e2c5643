#include "agent/exit_flush.h"

#include <time.h>

#include <atomic>

#include "agent/watchdog_sleep.h"

namespace hangwatch::agent {
namespace {

// How long an exit waits for the records, whatever the threshold: the request wakes the
// watchdog at once (watchdog_sleep.h), which then writes a lag line and at most one hang. A
// watchdog that cannot answer in time (in the middle of a capture, or of the first
// symbolization of a large module) loses them rather than hold the exit up.
constexpr uint64_t kMaxWaitNs = 50'000'000;
constexpr long kPollNs = 500'000;

std::atomic<uint64_t> g_max_wait_ns{0};  // 0: no watchdog runs
std::atomic<uint32_t> g_requested{0};
std::atomic<uint32_t> g_done{0};

uint64_t NowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

bool FlushBeforeExit() noexcept {
  const uint64_t bound = g_max_wait_ns.load(std::memory_order_acquire);
  if (bound == 0) return false;
  g_requested.store(1, std::memory_order_release);
  WakeWatchdog();
  const uint64_t deadline = NowNs() + bound;
  while (g_done.load(std::memory_order_acquire) == 0) {
    // Disarmed meanwhile: Stop() ran on another thread and wrote the records itself.
    if (g_max_wait_ns.load(std::memory_order_acquire) == 0) return true;
    if (NowNs() >= deadline) return false;
    const timespec step{0, kPollNs};
    nanosleep(&step, nullptr);
  }
  return true;
}

void ExitFlushArm() noexcept {
  g_requested.store(0, std::memory_order_relaxed);
  g_done.store(0, std::memory_order_relaxed);
  g_max_wait_ns.store(kMaxWaitNs, std::memory_order_release);
}

void ExitFlushDisarm() noexcept { g_max_wait_ns.store(0, std::memory_order_release); }

bool ExitFlushRequested() noexcept { return g_requested.load(std::memory_order_acquire) != 0; }

void ExitFlushDone() noexcept { g_done.store(1, std::memory_order_release); }

}  // namespace hangwatch::agent
