#include "hangwatch_uv.h"

#include <cstdio>
#include <utility>

#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"

namespace hangwatch {
namespace {

// What the pass about to begin will dispatch (hangwatch_uv.h, "What a pass dispatches").
struct DueHandles {
  uint64_t now_ms = 0;  // the loop's time (uv_now)
  int timers = 0;
  int idles = 0;
  const char* type = nullptr;  // the last one seen, and its callback
  const void* callback = nullptr;
  int64_t late_ms = -1;  // how long past its due time the latest of the due timers is
};

void CountDue(uv_handle_t* handle, void* arg) {
  if (uv_is_active(handle) == 0 || uv_is_closing(handle) != 0) return;
  auto* due = static_cast<DueHandles*>(arg);
  const uv_handle_type type = uv_handle_get_type(handle);
  if (type == UV_TIMER) {
    auto* timer = reinterpret_cast<uv_timer_t*>(handle);
    if (uv_timer_get_due_in(timer) != 0) return;
    ++due->timers;
    // The due time in the loop's clock (the timer's own field: libuv has no getter for it).
    if (timer->timeout <= due->now_ms) {
      const auto late = static_cast<int64_t>(due->now_ms - timer->timeout);
      if (late > due->late_ms) due->late_ms = late;
    }
    due->callback = reinterpret_cast<const void*>(timer->timer_cb);
  } else if (type == UV_IDLE) {
    ++due->idles;
    due->callback = reinterpret_cast<const void*>(reinterpret_cast<uv_idle_t*>(handle)->idle_cb);
  } else {
    return;
  }
  due->type = uv_handle_type_name(type);
}

// Two per thread, alternated: the previous pass's text stays whole while the watchdog may
// still be reading it.
constexpr size_t kTextBytes = 64;
thread_local char t_texts[2][kTextBytes];
thread_local int t_next_text = 0;

// At the start of a pass (after the wait): the timers due and the idle handles it will run.
// Looks at the handles only when the loop has something to run before its next wait
// (uv_backend_timeout() == 0): a pass of I/O callbacks alone walks nothing.
void TellWhatIsDue(uv_loop_t* loop) {
  if (internal::t_run_loop_state == nullptr || uv_backend_timeout(loop) != 0) return;
  DueHandles due;
  due.now_ms = uv_now(loop);
  uv_walk(loop, CountDue, &due);
  const int count = due.timers + due.idles;
  if (count == 0) return;
  // The pass's queued time: the latest due timer's lateness (ms: the loop's clock), known only
  // when the pass runs timers.
  const int64_t queued_ns = due.late_ms >= 0 ? due.late_ms * 1'000'000 : -1;
  if (count == 1) {
    SetPassSource(due.type, due.callback, queued_ns);
    return;
  }
  char* text = t_texts[t_next_text];
  t_next_text ^= 1;
  const char* timers = due.timers == 1 ? "timer" : "timers";
  const char* idles = due.idles == 1 ? "idle handle" : "idle handles";
  if (due.idles == 0) {
    std::snprintf(text, kTextBytes, "%d %s due", due.timers, timers);
  } else if (due.timers == 0) {
    std::snprintf(text, kTextBytes, "%d %s due", due.idles, idles);
  } else {
    std::snprintf(text, kTextBytes, "%d %s and %d %s due", due.timers, timers, due.idles, idles);
  }
  SetPassSource(text, nullptr, queued_ns);
}

}  // namespace

UvLoopWatch::~UvLoopWatch() { Detach(); }

int UvLoopWatch::Attach(uv_loop_t* loop, std::string_view role, const ThreadOptions& options) {
  if (loop_ != nullptr) return UV_EBUSY;
  ThreadWatch watch = WatchThread(role, options);
  if (int rc = Attach(loop); rc != 0) return rc;  // `watch` stops with the failed attach
  thread_watch_ = std::move(watch);
  return 0;
}

int UvLoopWatch::Attach(uv_loop_t* loop) {
  if (loop_ != nullptr) return UV_EBUSY;
  if (int rc = uv_prepare_init(loop, &prepare_); rc != 0) return rc;
  if (int rc = uv_check_init(loop, &check_); rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
    return rc;
  }
  uv_prepare_start(&prepare_, [](uv_prepare_t*) { hangwatch::AboutToWait(); });
  uv_check_start(&check_, [](uv_check_t* check) {
    hangwatch::WokeUp();
    TellWhatIsDue(check->loop);
  });
  uv_unref(reinterpret_cast<uv_handle_t*>(&prepare_));
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
  loop_ = loop;
  hangwatch::BeginWork();
  return 0;
}

void UvLoopWatch::Detach() {
  if (loop_ == nullptr) return;
  uv_prepare_stop(&prepare_);
  uv_check_stop(&check_);
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
  // Let the loop finish the closes now, so the handles are released before *this is.
  uv_run(loop_, UV_RUN_NOWAIT);
  loop_ = nullptr;
  hangwatch::EndWork();
  thread_watch_.Stop();
}

}  // namespace hangwatch
