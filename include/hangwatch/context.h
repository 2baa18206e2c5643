// What a pass was serving: names the program gives its work, and what adapters know of the
// event a pass dispatches. Both go into the hang of a pass that became one, as its `context`
// (HangRecord::context, docs/context.md); a pass that is not a hang pays only the stores below.
//
//   void DecodeThumbnail(const Image& image) {
//     hangwatch::ScopedLabel label("thumbnail.decode");   // a static string
//     ...                                                 // a hang here says "thumbnail.decode"
//   }
//
// Labels nest: a hang carries the innermost one (Context::label) and the whole stack,
// outermost first (Context::label_path). They act on the calling thread's watch, as
// BeginWork() does: the main thread, a thread that called WatchThread(), nothing elsewhere (an
// unwatched thread pays one thread-local load). The stack keeps 8 names; deeper ones are
// counted, not kept; each name is cut to 63 bytes in the hang. Nothing allocates, and the
// watchdog copies the names itself: no dynamic thread-local storage is touched by the capture.
#ifndef HANGWATCH_CONTEXT_H_
#define HANGWATCH_CONTEXT_H_

#include <atomic>
#include <cstdint>

#include "hangwatch/internal/pass_timer.h"

namespace hangwatch {

// Names the calling thread's work from construction to destruction. `name` must outlive the
// label (a string literal). Labels are pushed and popped in order (a scoped object); not
// copyable, not movable.
class ScopedLabel {
 public:
  explicit ScopedLabel(const char* name) noexcept {
    std::atomic<uint64_t>* s = internal::t_run_loop_state;
    if (s == nullptr) return;
    context_ = &internal::ContextOf(s);
    const uint32_t depth = context_->label_depth.load(std::memory_order_relaxed);
    if (depth < internal::kMaxLabelDepth) {
      context_->labels[depth].store(name, std::memory_order_relaxed);
    }
    context_->label_depth.store(depth + 1, std::memory_order_release);
  }
  ~ScopedLabel() {
    if (context_ == nullptr) return;
    const uint32_t depth = context_->label_depth.load(std::memory_order_relaxed);
    context_->label_depth.store(depth - 1, std::memory_order_release);
  }
  ScopedLabel(const ScopedLabel&) = delete;
  ScopedLabel& operator=(const ScopedLabel&) = delete;

 private:
  internal::PassContext* context_ = nullptr;
};

// For run-loop adapters (GLib, libuv, Qt, asio ship their own): the pass under way (or, called
// between passes, the next one) dispatches `source` (a name: a GLib source's, "timer",
// "QMouseEvent to MainWindow \"main\"") through `callback` (a function's address, symbolized
// in the hang; null when none). `queued_ns`: how long the work had waited when its dispatch
// began, where the loop knows when it became due (a timer past its due time); -1 when not
// known; a known one also counts the pass in the lag records' queued + running histogram
// (`delay`: the pass's time plus how long its work had waited, docs/context.md). `source` must stay
// valid until the pass ends. The last call of a pass wins, but for a queued time it does not
// know: the pass keeps an earlier call's. Six relaxed stores, and a clock read when `queued_ns`
// is known; nothing on an unwatched thread.
inline void SetPassSource(const char* source, const void* callback = nullptr,
                          int64_t queued_ns = -1) noexcept {
  std::atomic<uint64_t>* s = internal::t_run_loop_state;
  if (s == nullptr) return;
  internal::PassContext& c = internal::ContextOf(s);
  const uint64_t pass = (s->load(std::memory_order_relaxed) & ~internal::kRunLoopTimedBit) | 1;
  // A queued time the pass already has (an earlier dispatch's in it: a late timer's before an
  // idle's) stays when this call knows none: the pass's work had waited.
  int64_t due_ns = -1;
  if (queued_ns < 0 && c.source_pass.load(std::memory_order_relaxed) == pass) {
    due_ns = c.source_due_ns.load(std::memory_order_relaxed);
    if (due_ns >= 0) queued_ns = c.source_queued_ns.load(std::memory_order_relaxed);
  }
  c.source_pass.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  c.source.store(source, std::memory_order_relaxed);
  c.callback.store(callback, std::memory_order_relaxed);
  c.source_queued_ns.store(queued_ns, std::memory_order_relaxed);
  if (queued_ns >= 0 && due_ns < 0) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    due_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec - queued_ns;
    // The pass's end goes out of line, where it is counted with its queued time.
    internal::TimerOf(s).out_of_line_above_ns.store(0, std::memory_order_relaxed);
  }
  c.source_due_ns.store(due_ns, std::memory_order_relaxed);
  c.source_pass.store(pass, std::memory_order_release);
}

}  // namespace hangwatch

#endif  // HANGWATCH_CONTEXT_H_
