// Not part of the API: the inline half of Config::time_every_pass, which BeginWork() and
// EndWork() (hangwatch.h) call. Users never name anything here.
//
// The watched thread reads a clock at both ends of a pass and bumps one counter of the pass
// histogram (hangwatch/pass_histogram.h) and the busy time: plain loads and relaxed stores of
// counters only it writes, no lock, no syscall, no call out of line except for a pass longer
// than 16 ms (rare by definition). The watchdog reads the counters without locking: each one is
// a single atomic word, so a read sees every pass either counted or not yet.
//
// The clock: the CPU's own counter where it ticks at a constant rate in every power state (x86
// invariant TSC, arm64's virtual counter), converted to nanoseconds with a factor measured at
// Start(); elsewhere clock_gettime(CLOCK_MONOTONIC), which the vDSO serves without a syscall.
#ifndef HANGWATCH_INTERNAL_PASS_TIMER_H_
#define HANGWATCH_INTERNAL_PASS_TIMER_H_

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "hangwatch/export.h"
#include "hangwatch/internal/pass_context.h"
#include "hangwatch/pass_histogram.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hangwatch::internal {

enum PassClock : uint32_t {
  kPassClockOff = 0,        // passes are not timed (the default)
  kPassClockMonotonic = 1,  // clock_gettime(CLOCK_MONOTONIC): ticks are nanoseconds
  kPassClockCounter = 2,    // the CPU's constant-rate counter
};

// Bit 63 of the run-loop state (g_run_loop_state, below): set while passes may be timed,
// so that an untimed BeginWork()/EndWork() learns the mode from the one load of the state it
// makes anyway (the pass counter below it would need 2^62 passes to reach it). Only the watched
// thread writes the state: EnablePassTimer() sets the bit there; DisablePassTimer(), which may
// run on any thread, only turns `clock` off, and the watched thread's next call clears the bit.
// Readers of the state mask it (RunLoopState()).
inline constexpr uint64_t kRunLoopTimedBit = uint64_t{1} << 63;

// The run-loop state (odd while a pass is running) without kRunLoopTimedBit.
inline uint64_t RunLoopState(const std::atomic<uint64_t>& state) noexcept {
  return state.load(std::memory_order_relaxed) & ~kRunLoopTimedBit;
}

// The measured duration of one slow pass, keyed by the pass's run-loop state (odd, without
// kRunLoopTimedBit; unique for the life of the process), so that the watchdog can give a hang
// the duration the watched thread measured rather than its own estimate. Written by the
// watched thread only, as a sequence lock: `state` 0, `ns`, then `state`.
struct MeasuredPass {
  std::atomic<uint64_t> state{0};
  std::atomic<uint64_t> ns{0};
};
// Slots of the last slow passes, by pass number: the watchdog reads its pass's slot within a
// tick of the pass's end, before this many more slow passes can reuse it.
inline constexpr int kMeasuredPassSlots = 8;

// A pass longer than this goes out of line (RecordSlowPassOf): the first slow-pass threshold.
inline constexpr uint32_t kSlowPassNs = static_cast<uint32_t>(kSlowPassThresholdsMs[0]) * 1'000'000;

struct PassTimer {
  std::atomic<uint32_t> clock{kPassClockOff};  // set by Start() on the watched thread
  // A pass longer than this many ns is finished out of line (RecordSlowPassOf): kSlowPassNs,
  // or 0 while the pass under way has a queued time to count (SetPassSource, context.h), so
  // that a pass without one pays nothing more than before: the same compare, against a word of
  // the line `clock` is read from. In the padding before ns_per_tick_q32: the layout is that
  // of agents built before it.
  std::atomic<uint32_t> out_of_line_above_ns{kSlowPassNs};
  std::atomic<uint64_t> ns_per_tick_q32{0};  // nanoseconds = ticks * this / 2^32
  // Ticks at BeginWork(); written by the watched thread, read by the watchdog for a pass still
  // running when the process exits (relaxed: a plain load and store).
  std::atomic<uint64_t> begin{0};
  std::atomic<uint64_t> busy_ns{0};
  std::atomic<uint64_t> slow[kSlowPassThresholds] = {};
  std::atomic<uint64_t> counts[pass_histogram::kBuckets] = {};
  MeasuredPass measured[kMeasuredPassSlots];
};
// The run-loop state and pass timer of a watched thread: the main thread's (g_main_loop, below)
// and those of the threads watched through hangwatch/threads.h. The state comes first, so that
// BeginWork() finds a thread's timer from the address of its state word, whatever the thread.
// A registry slot's kRunLoopTimedBit stays set for the life of the watch (TimedBegin() does not
// clear it when the clock is off): set on the watched thread when it registers, it never has to
// be set by another thread, whose read-modify-write could race with the thread's plain stores.
// The pass's context (labels, what began it, what it dispatches: pass_context.h) comes last.
struct ThreadLoop {
  std::atomic<uint64_t> state{0};
  PassTimer timer;
  PassContext context;
};
static_assert(offsetof(PassTimer, ns_per_tick_q32) == 8, "out_of_line_above_ns fills padding");

// The ThreadLoop a PassTimer belongs to (every PassTimer is a ThreadLoop's `timer`).
inline ThreadLoop& LoopOf(PassTimer& timer) noexcept {
  return *reinterpret_cast<ThreadLoop*>(reinterpret_cast<char*>(&timer) -
                                        offsetof(ThreadLoop, timer));
}

// The main thread's (the one that called Start()): its run-loop state (odd while a pass is
// running, even while idle; each pass adds 2; bit 63 is kRunLoopTimedBit; written only by the
// watched thread, read by the watchdog) and its pass timer, also by their earlier names.
HANGWATCH_EXPORT extern ThreadLoop g_main_loop;
inline std::atomic<uint64_t>& g_run_loop_state = g_main_loop.state;
inline PassTimer& g_pass_timer = g_main_loop.timer;

// The calling thread's run-loop state word: &g_run_loop_state on the thread that called
// Start() (and the thread that loaded the library), its ThreadLoop's on a thread that called
// WatchThread(), null elsewhere (BeginWork() and EndWork() do nothing there). initial-exec: one
// load relative to the thread pointer from inline code in any module, no __tls_get_addr call
// (the library is loaded at start-up, or dlopen()ed into the static TLS surplus: 8 bytes).
#if defined(__ELF__)
HANGWATCH_EXPORT extern __thread std::atomic<uint64_t>* t_run_loop_state
    __attribute__((tls_model("initial-exec")));
#else
HANGWATCH_EXPORT extern __thread std::atomic<uint64_t>* t_run_loop_state;
#endif

// The timer beside a run-loop state word (no branch: every word is a ThreadLoop's first member).
inline PassTimer& TimerOf(std::atomic<uint64_t>* state) noexcept {
  return reinterpret_cast<ThreadLoop*>(state)->timer;
}

// The pass context beside a run-loop state word.
inline PassContext& ContextOf(std::atomic<uint64_t>* state) noexcept {
  return reinterpret_cast<ThreadLoop*>(state)->context;
}

// Counts a pass of `timer` longer than the first slow-pass threshold (out of line: rare), and
// keeps its duration for the watchdog (MeasuredPass); counts a pass with a queued time in the
// queued + running histogram (PassContext::delay_moves). `state`: the run-loop state of the
// pass that ends, without kRunLoopTimedBit.
HANGWATCH_EXPORT void RecordSlowPassOf(PassTimer& timer, uint64_t state, uint64_t ns) noexcept;
// The main thread's (kept for code compiled against earlier headers).
HANGWATCH_EXPORT void RecordSlowPass(uint64_t ns) noexcept;

inline uint64_t ReadPassClock(uint32_t clock) noexcept {
#if defined(__x86_64__)
  if (clock == kPassClockCounter) return __rdtsc();
#elif defined(__aarch64__)
  if (clock == kPassClockCounter) {
    uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
  }
#endif
  (void)clock;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

__extension__ typedef unsigned __int128 PassTimerU128;

// The pass of `t` that began at t.begin ended at `now` (ticks); `state` is its run-loop state.
inline void RecordPass(PassTimer& t, uint64_t state, uint64_t now) noexcept {
  const int64_t ticks = static_cast<int64_t>(now - t.begin.load(std::memory_order_relaxed));
  // A counter read on another CPU may be a little behind: such a pass took no time.
  const uint64_t ns =
      ticks <= 0 ? 0
                 : static_cast<uint64_t>((static_cast<PassTimerU128>(ticks) *
                                          t.ns_per_tick_q32.load(std::memory_order_relaxed)) >>
                                         32);
  std::atomic<uint64_t>& bucket = t.counts[pass_histogram::BucketOf(ns)];
  bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  t.busy_ns.store(t.busy_ns.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
  if (__builtin_expect(ns > t.out_of_line_above_ns.load(std::memory_order_relaxed), 0)) {
    RecordSlowPassOf(t, state & ~kRunLoopTimedBit, ns);
  }
}

// BeginWork() with kRunLoopTimedBit set in `state`, the value of `*word`: the pass running
// (when `state` is odd) ends, a new one begins. Returns the state to advance: the main
// thread's without the bit once the timer is off.
inline uint64_t TimedBegin(uint64_t state, std::atomic<uint64_t>* word) noexcept {
  PassTimer& t = TimerOf(word);
  const uint32_t clock = t.clock.load(std::memory_order_relaxed);
  if (clock == kPassClockOff) return word == &g_run_loop_state ? state & ~kRunLoopTimedBit : state;
  const uint64_t now = ReadPassClock(clock);
  if ((state & 1) != 0) RecordPass(t, state, now);
  t.begin.store(now, std::memory_order_relaxed);
  return state;
}

// EndWork() with kRunLoopTimedBit set in `state`: the pass running (when `state` is odd) ends.
inline uint64_t TimedEnd(uint64_t state, std::atomic<uint64_t>* word) noexcept {
  PassTimer& t = TimerOf(word);
  const uint32_t clock = t.clock.load(std::memory_order_relaxed);
  if (clock == kPassClockOff) return word == &g_run_loop_state ? state & ~kRunLoopTimedBit : state;
  if ((state & 1) != 0) RecordPass(t, state, ReadPassClock(clock));
  return state;
}

}  // namespace hangwatch::internal

#endif  // HANGWATCH_INTERNAL_PASS_TIMER_H_
