#include "agent/core/exit_flush.h"

#include <time.h>

#include <atomic>

#include "agent/core/watchdog_sleep.h"
#include "hangwatch/hangwatch.h"

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
std::atomic<pthread_t> g_watched{};
std::atomic<bool> g_watched_known{false};
std::atomic<uint64_t> g_shutdown_pass{0};
std::atomic<bool> g_exit_noted{false};

uint64_t NowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void NoteProcessExit() noexcept {
  if (g_max_wait_ns.load(std::memory_order_acquire) == 0) return;  // no watchdog
  g_exit_noted.store(true, std::memory_order_release);
  if (!g_watched_known.load(std::memory_order_acquire) ||
      !pthread_equal(pthread_self(), g_watched.load(std::memory_order_relaxed))) {
    return;
  }
  const uint64_t state = internal::RunLoopState(internal::g_run_loop_state);
  if ((state & 1) == 0) return;  // between passes (a signal handler during the wait)
  g_shutdown_pass.store(state, std::memory_order_relaxed);
  // Before the state moves on: a watchdog that sees the pass end sees it tagged
  // (StallMonitor reads the tag after an acquire fence).
  std::atomic_thread_fence(std::memory_order_release);
  AboutToWait();
}

void StopAtProcessExit() noexcept {
  NoteProcessExit();
  Stop();
}

bool FlushBeforeExit() noexcept {
  const uint64_t bound = g_max_wait_ns.load(std::memory_order_acquire);
  if (bound == 0) return false;
  NoteProcessExit();
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

void ExitFlushArm(pthread_t watched) noexcept {
  g_watched.store(watched, std::memory_order_relaxed);
  g_watched_known.store(true, std::memory_order_release);
  g_shutdown_pass.store(0, std::memory_order_relaxed);
  g_exit_noted.store(false, std::memory_order_relaxed);
  g_requested.store(0, std::memory_order_relaxed);
  g_done.store(0, std::memory_order_relaxed);
  g_max_wait_ns.store(kMaxWaitNs, std::memory_order_release);
}

void ExitFlushDisarm() noexcept { g_max_wait_ns.store(0, std::memory_order_release); }

const std::atomic<uint64_t>* ShutdownPassState() noexcept { return &g_shutdown_pass; }

bool ExitNoted() noexcept { return g_exit_noted.load(std::memory_order_acquire); }

bool ExitFlushRequested() noexcept { return g_requested.load(std::memory_order_acquire) != 0; }

void ExitFlushDone() noexcept { g_done.store(1, std::memory_order_release); }

}  // namespace hangwatch::agent
