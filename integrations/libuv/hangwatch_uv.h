// hangwatch for libuv: feeds the agent the run-loop activity of a uv_loop_t.
//
//   uv_loop_t* loop = uv_default_loop();
//   hangwatch::Start(config);                 // on the loop's thread
//   hangwatch::UvLoopWatch watch;
//   watch.Attach(loop);                       // right before uv_run
//   uv_run(loop, UV_RUN_DEFAULT);
//   watch.Detach();                           // the loop is idle again: not a hang
//
// A uv_prepare handle runs right before the loop blocks for I/O (about to wait) and a uv_check
// handle right after (woke up); everything else the loop does - timers, I/O callbacks, idle
// and close callbacks - lies between a check and the next prepare, inside a run-loop pass.
// Both handles are unreferenced: they never keep the loop alive.
#ifndef HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_
#define HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_

#include <uv.h>

namespace hangwatch {

class UvLoopWatch {
 public:
  UvLoopWatch() = default;
  // Detaches. The handles are closed with uv_close; if the loop is still alive, it must run
  // once more (uv_run with UV_RUN_NOWAIT) before the loop is closed.
  ~UvLoopWatch();
  UvLoopWatch(const UvLoopWatch&) = delete;
  UvLoopWatch& operator=(const UvLoopWatch&) = delete;

  // Starts watching `loop`, which must run on the thread hangwatch::Start() watches. Marks the
  // thread busy: what runs before the loop's first wait belongs to a pass. Returns 0 or a
  // negative libuv error code.
  int Attach(uv_loop_t* loop);
  // Stops the handles, closes them, and marks the thread idle. Idempotent.
  void Detach();
  bool attached() const { return loop_ != nullptr; }

 private:
  uv_loop_t* loop_ = nullptr;
  uv_prepare_t prepare_{};
  uv_check_t check_{};
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_
