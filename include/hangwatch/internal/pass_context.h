// Not part of the API: the words a watched thread keeps about the pass it runs, beside its
// run-loop state (internal::ThreadLoop), for hangwatch/context.h and the preload shim. Users
// never name anything here.
//
// Written only by the thread itself (relaxed stores of words, no lock, no call), read by the
// watchdog while the pass is stuck: a value that belongs to one pass carries that pass's
// run-loop state as a stamp, written last (release) and cleared first, so that the watchdog
// takes it only for the pass it follows and never half-written. Strings are the callers' own
// (a label is a static string, a source's name lives while it dispatches): the watchdog copies
// them through a guarded read (unwind/self_memory.h), never in a signal handler.
#ifndef HANGWATCH_INTERNAL_PASS_CONTEXT_H_
#define HANGWATCH_INTERNAL_PASS_CONTEXT_H_

#include <atomic>
#include <cstdint>

namespace hangwatch::internal {

// ScopedLabel's stack keeps this many names; deeper ones are counted, not kept.
inline constexpr uint32_t kMaxLabelDepth = 8;
// Passes with a queued time a thread can finish between two looks of the watchdog (every
// check interval) before the oldest are lost (counted as lost, never as another pass).
inline constexpr uint32_t kDelayMoveSlots = 32;

// What the wait that began a pass returned (PassContext::trigger, bits 0-7).
enum TriggerKind : uint32_t {
  kTriggerNone = 0,
  kTriggerFd = 1,           // poll / select: a ready descriptor (bits 32-63), `events` its revents
  kTriggerEpoll = 2,        // epoll_wait: its descriptor (bits 32-63), the first event's `data`
                            // word and `events`
  kTriggerTimeout = 3,      // nothing was ready: the wait's own time-out (`data`: ms asked for)
  kTriggerInterrupted = 4,  // the wait returned EINTR (a signal)
};

// trigger word: kind (bits 0-7), how many were ready (bits 8-31, capped), fd (bits 32-63).
inline constexpr uint64_t TriggerWord(uint32_t kind, uint32_t ready, int fd) noexcept {
  return uint64_t{kind & 0xffu} | (uint64_t{ready > 0xffffffu ? 0xffffffu : ready} << 8) |
         (uint64_t{static_cast<uint32_t>(fd)} << 32);
}
inline constexpr uint32_t TriggerKindOf(uint64_t word) noexcept {
  return static_cast<uint32_t>(word & 0xffu);
}
inline constexpr uint32_t TriggerReadyOf(uint64_t word) noexcept {
  return static_cast<uint32_t>((word >> 8) & 0xffffffu);
}
inline constexpr int TriggerFdOf(uint64_t word) noexcept {
  return static_cast<int>(static_cast<uint32_t>(word >> 32));
}

struct PassContext {
  // ScopedLabel's stack, outermost first. `label_depth` counts every label pushed, kept or not.
  std::atomic<uint32_t> label_depth{0};
  std::atomic<const char*> labels[kMaxLabelDepth] = {};
  // What began the pass (the preload shim, at the wait's return): stamped with that pass's
  // run-loop state (without kRunLoopTimedBit), 0 while written.
  std::atomic<uint64_t> trigger_pass{0};
  std::atomic<uint64_t> trigger{0};  // TriggerWord()
  std::atomic<uint64_t> trigger_data{0};
  std::atomic<uint64_t> trigger_events{0};
  // What the pass dispatches (SetPassSource(), by an adapter): stamped likewise.
  std::atomic<uint64_t> source_pass{0};
  std::atomic<const char*> source{nullptr};
  std::atomic<const void*> callback{nullptr};
  std::atomic<int64_t> source_queued_ns{-1};  // how late its dispatch began; -1: not known
  // When that work became due (CLOCK_MONOTONIC ns; SetPassSource with a queued time), for the
  // queued + running histogram; -1: not known.
  std::atomic<int64_t> source_due_ns{-1};
  // Passes with a queued time, as the thread finished them (out of line, RecordSlowPassOf): a
  // ring of DelayMove() words the watchdog drains into its lag records (agent/core/pass_delay.h).
  // `delay_writes` counts every word written; the watchdog keeps how far it read.
  std::atomic<uint64_t> delay_writes{0};
  std::atomic<uint64_t> delay_moves[kDelayMoveSlots] = {};
};

// A pass that ran `running` bucket's time and, with its queued time, `delay` bucket's
// (hangwatch/pass_histogram.h buckets).
inline constexpr uint64_t DelayMove(uint32_t running_bucket, uint32_t delay_bucket) noexcept {
  return uint64_t{running_bucket & 0xffffu} | (uint64_t{delay_bucket & 0xffffu} << 16);
}
inline constexpr int DelayMoveRunning(uint64_t move) noexcept {
  return static_cast<int>(move & 0xffffu);
}
inline constexpr int DelayMoveDelay(uint64_t move) noexcept {
  return static_cast<int>((move >> 16) & 0xffffu);
}

}  // namespace hangwatch::internal

#endif  // HANGWATCH_INTERNAL_PASS_CONTEXT_H_
