// The words BeginWork() and EndWork() act on (hangwatch/hangwatch.h,
// hangwatch/internal/pass_timer.h): the main thread's run-loop state and pass timer, the
// calling thread's pointer to its own word, and the out-of-line half of a timed pass.
#include <time.h>

#include <atomic>
#include <cstdint>

#include "hangwatch/hangwatch.h"
#include "hangwatch/internal/pass_timer.h"

namespace hangwatch::internal {

ThreadLoop g_main_loop;
__thread std::atomic<uint64_t>* t_run_loop_state = nullptr;

namespace {
// The thread that loads the library (the main thread, for a library linked at start-up; the
// thread that dlopen()s it otherwise) acts on the main word from the start, as before there
// were other watched threads: a pass begun before Start() is the start-up pass. Start() points
// its own calling thread there too.
// The address goes through an empty asm: clang's optimizer otherwise evaluates this constructor
// at compile time and makes its store the variable's initial value, which every thread's copy
// starts with (seen at -O1 and up: BeginWork() on any thread then moved the main word).
__attribute__((constructor)) void PointLoadingThreadAtMainWord() {
  std::atomic<uint64_t>* main_word = &g_run_loop_state;
  asm volatile("" : "+r"(main_word));
  if (t_run_loop_state == nullptr) t_run_loop_state = main_word;
}
}  // namespace

void RecordSlowPass(uint64_t ns) noexcept {
  // Called before BeginWork()/EndWork() advance the state: it still names the pass that ends
  // (the watched thread is the state's only writer).
  RecordSlowPassOf(g_pass_timer, RunLoopState(g_run_loop_state), ns);
}

namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A pass of `loop` that ran `ns` ends; when SetPassSource() gave it a queued time, the pass's
// delay (from when its work became due to now, at least its own time) goes to the ring the
// watchdog drains into the lag records' queued + running histogram.
void RecordQueuedPass(ThreadLoop& loop, uint64_t state, uint64_t ns) {
  PassContext& c = loop.context;
  if (c.source_pass.load(std::memory_order_relaxed) != (state | 1)) return;  // another pass's
  const int64_t due = c.source_due_ns.load(std::memory_order_relaxed);
  if (due < 0) return;
  c.source_due_ns.store(-1, std::memory_order_relaxed);  // counted once
  const int64_t since_due = MonotonicNs() - due;
  const uint64_t delay = since_due > 0 && static_cast<uint64_t>(since_due) > ns
                             ? static_cast<uint64_t>(since_due)
                             : ns;
  const uint64_t n = c.delay_writes.load(std::memory_order_relaxed);
  c.delay_moves[n % kDelayMoveSlots].store(
      DelayMove(static_cast<uint32_t>(pass_histogram::BucketOf(ns)),
                static_cast<uint32_t>(pass_histogram::BucketOf(delay))),
      std::memory_order_relaxed);
  c.delay_writes.store(n + 1, std::memory_order_release);
}

}  // namespace

void RecordSlowPassOf(PassTimer& timer, uint64_t state, uint64_t ns) noexcept {
  if (timer.out_of_line_above_ns.load(std::memory_order_relaxed) != kSlowPassNs) {
    timer.out_of_line_above_ns.store(kSlowPassNs, std::memory_order_relaxed);
    RecordQueuedPass(LoopOf(timer), state, ns);
  }
  if (ns <= kSlowPassNs) return;
  MeasuredPass& m = timer.measured[(state >> 1) % kMeasuredPassSlots];
  m.state.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  m.ns.store(ns, std::memory_order_relaxed);
  m.state.store(state, std::memory_order_release);
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    if (ns <= static_cast<uint64_t>(kSlowPassThresholdsMs[t]) * 1'000'000) break;
    std::atomic<uint64_t>& c = timer.slow[t];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

}  // namespace hangwatch::internal
