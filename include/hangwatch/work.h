// BeginWork(), EndWork(), WorkScope: what a run loop tells hangwatch, on the thread it runs on.
// Included by hangwatch/hangwatch.h and hangwatch/threads.h; inline, so that a pass costs two
// relaxed stores and no call.
#ifndef HANGWATCH_WORK_H_
#define HANGWATCH_WORK_H_

#include <atomic>
#include <cstdint>

#include "hangwatch/internal/pass_timer.h"

namespace hangwatch {

// Run-loop activity, called on the watched thread: the thread that called Start(), or one that
// called WatchThread() (hangwatch/threads.h); on any other thread they do nothing. A relaxed
// load and a relaxed store each: no clock read, no syscall, no lock (the watchdog does all the
// timing). Calling BeginWork() while a pass is running ends it and starts a new one.
// With Config::time_every_pass, each also reads a clock and EndWork() counts the pass
// (hangwatch/internal/pass_timer.h); the mode is a bit of the same word, so an untimed call
// still makes one load.
inline void BeginWork() noexcept {
  std::atomic<uint64_t>* s = internal::t_run_loop_state;
  if (s == nullptr) return;
  uint64_t v = s->load(std::memory_order_relaxed);
  if ((v & internal::kRunLoopTimedBit) != 0) v = internal::TimedBegin(v, s);
  s->store(v + 1 + (v & 1), std::memory_order_relaxed);
}
inline void EndWork() noexcept {
  std::atomic<uint64_t>* s = internal::t_run_loop_state;
  if (s == nullptr) return;
  uint64_t v = s->load(std::memory_order_relaxed);
  if ((v & internal::kRunLoopTimedBit) != 0) v = internal::TimedEnd(v, s);
  s->store(v + (v & 1), std::memory_order_relaxed);
}
// The same, named after the run-loop events that cause them.
inline void WokeUp() noexcept { BeginWork(); }
inline void AboutToWait() noexcept { EndWork(); }

// One run-loop pass: BeginWork() on construction, EndWork() on destruction. Does not nest.
class WorkScope {
 public:
  WorkScope() noexcept { BeginWork(); }
  ~WorkScope() { EndWork(); }
  WorkScope(const WorkScope&) = delete;
  WorkScope& operator=(const WorkScope&) = delete;
};

}  // namespace hangwatch

#endif  // HANGWATCH_WORK_H_
