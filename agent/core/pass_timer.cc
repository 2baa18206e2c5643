// Choosing, calibrating and reading the pass clock (pass_timer.h).
#include "agent/core/pass_timer.h"

#include <time.h>

#include <atomic>
#include <cstdint>

#include "hangwatch/hangwatch.h"
#include "hangwatch/internal/pass_timer.h"
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace hangwatch {
namespace agent {
namespace {

using internal::g_pass_timer;

// Whether the CPU has a counter that ticks at one rate in every power state, readable
// without a syscall.
bool HasConstantRateCounter() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  // unsigned in GCC's cpuid.h, int in clang's.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007, a, b, c, d);
  return (d & (1u << 8)) != 0;  // invariant TSC
#elif defined(__aarch64__)
  return true;  // the generic timer's virtual counter
#else
  return false;
#endif
}

// Nanoseconds per counter tick, times 2^32; 0 when it cannot be measured.
uint64_t MeasureCounterRate() {
#if defined(__aarch64__)
  uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return hz == 0 ? 0
                 : static_cast<uint64_t>(
                       (static_cast<internal::PassTimerU128>(1'000'000'000) << 32) / hz);
#else
  // Against CLOCK_MONOTONIC over >= 1 ms: each end is bracketed by two clock reads, so the
  // error is a few tens of nanoseconds over a millisecond (< 0.01 %) -- when nothing runs in
  // between. A thread preempted inside one bracket (a loaded machine, a sanitizer build) would
  // put a whole time slice into the rate (0.3 % was seen: a 300 ms pass read as 299 ms), so
  // each end is the narrowest of several brackets.
  auto mono = [] { return internal::ReadPassClock(internal::kPassClockMonotonic); };
  auto sample = [&](uint64_t* ticks, uint64_t* ns) {
    uint64_t narrowest = ~uint64_t{0};
    for (int i = 0; i < 16; ++i) {
      const uint64_t a = mono();
      const uint64_t t = internal::ReadPassClock(internal::kPassClockCounter);
      const uint64_t b = mono();
      if (b - a < narrowest) {
        narrowest = b - a;
        *ticks = t;
        *ns = a + (b - a) / 2;
      }
    }
  };
  uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
  sample(&t0, &n0);
  const timespec one_ms{0, 1'000'000};
  nanosleep(&one_ms, nullptr);
  sample(&t1, &n1);
  if (t1 <= t0 || n1 <= n0) return 0;
  return static_cast<uint64_t>((static_cast<internal::PassTimerU128>(n1 - n0) << 32) / (t1 - t0));
#endif
}

}  // namespace

void EnablePassTimer() {
  StartPassClock(&g_pass_timer);
  // fetch_or, not a load and a store: a thread still calling BeginWork() from an earlier
  // session must not be able to erase the bit for this one.
  internal::g_run_loop_state.fetch_or(internal::kRunLoopTimedBit, std::memory_order_relaxed);
}

void StartPassClock(internal::PassTimer* timer) {
  // Measured once: the rate is a property of the machine.
  static const uint64_t counter_rate = HasConstantRateCounter() ? MeasureCounterRate() : 0;
  const uint32_t clock =
      counter_rate != 0 ? internal::kPassClockCounter : internal::kPassClockMonotonic;
  timer->ns_per_tick_q32.store(counter_rate != 0 ? counter_rate : uint64_t{1} << 32,
                               std::memory_order_relaxed);
  if (timer->clock.load(std::memory_order_relaxed) == clock) return;  // already running
  timer->begin.store(internal::ReadPassClock(clock), std::memory_order_relaxed);
  timer->clock.store(clock, std::memory_order_release);
}

void DisablePassTimer() { StopPassClock(&g_pass_timer); }

void StopPassClock(internal::PassTimer* timer) {
  timer->clock.store(internal::kPassClockOff, std::memory_order_relaxed);
}

bool PassTimerUsesCounter() {
  return g_pass_timer.clock.load(std::memory_order_relaxed) == internal::kPassClockCounter;
}

bool MeasuredPassNs(uint64_t state, uint64_t* ns) {
  return MeasuredPassNs(g_pass_timer, state, ns);
}

bool MeasuredPassNs(const internal::PassTimer& timer, uint64_t state, uint64_t* ns) {
  const internal::MeasuredPass& m = timer.measured[(state >> 1) % internal::kMeasuredPassSlots];
  if (state == 0 || m.state.load(std::memory_order_acquire) != state) return false;
  const uint64_t v = m.ns.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (m.state.load(std::memory_order_relaxed) != state) return false;  // reused meanwhile
  *ns = v;
  return true;
}

bool RunningPassNs(uint64_t state, uint64_t* ns) {
  return RunningPassNs(internal::g_run_loop_state, g_pass_timer, state, ns);
}

bool RunningPassNs(const std::atomic<uint64_t>& word, const internal::PassTimer& timer,
                   uint64_t state, uint64_t* ns) {
  const uint32_t clock = timer.clock.load(std::memory_order_relaxed);
  const uint64_t before = word.load(std::memory_order_acquire);
  if (clock == internal::kPassClockOff || (before & internal::kRunLoopTimedBit) == 0 ||
      (before & ~internal::kRunLoopTimedBit) != state || (state & 1) == 0) {
    return false;
  }
  const uint64_t begin = timer.begin.load(std::memory_order_relaxed);
  const uint64_t now = internal::ReadPassClock(clock);
  std::atomic_thread_fence(std::memory_order_acquire);
  // A new pass began meanwhile: `begin` may be its own.
  if (word.load(std::memory_order_relaxed) != before) return false;
  const int64_t ticks = static_cast<int64_t>(now - begin);
  *ns = ticks <= 0
            ? 0
            : static_cast<uint64_t>((static_cast<internal::PassTimerU128>(ticks) *
                                     timer.ns_per_tick_q32.load(std::memory_order_relaxed)) >>
                                    32);
  return true;
}

PassHistogram ReadPassTimer() { return ReadPassTimer(g_pass_timer); }

PassHistogram ReadPassTimer(const internal::PassTimer& timer) {
  PassHistogram h;
  for (int i = 0; i < pass_histogram::kBuckets; ++i) {
    const uint64_t n = timer.counts[i].load(std::memory_order_relaxed);
    if (n != 0) h.AddToBucket(i, n);
  }
  h.AddBusyNs(timer.busy_ns.load(std::memory_order_relaxed));
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    h.AddSlowPasses(t, timer.slow[t].load(std::memory_order_relaxed));
  }
  return h;
}

}  // namespace agent
}  // namespace hangwatch
