#include "hangwatch_uv.h"

#include <utility>

#include "hangwatch/hangwatch.h"

namespace hangwatch {

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
  uv_check_start(&check_, [](uv_check_t*) { hangwatch::WokeUp(); });
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
