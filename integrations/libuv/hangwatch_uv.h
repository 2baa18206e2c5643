// hangwatch for libuv: feeds the agent the run-loop activity of a uv_loop_t, on the loop's
// thread.
//
//   uv_loop_t* loop = uv_default_loop();
//   hangwatch::Start(config);                 // the main thread
//   hangwatch::UvLoopWatch watch;
//   watch.Attach(loop);                       // right before uv_run
//   uv_run(loop, UV_RUN_DEFAULT);
//   watch.Detach();                           // the loop is idle again: not a hang
//
//   void IoThread(uv_loop_t* io_loop) {       // a loop on a thread of its own
//     hangwatch::UvLoopWatch watch;
//     watch.Attach(io_loop, "io");            // watches this thread under "io"
//     uv_run(io_loop, UV_RUN_DEFAULT);
//     watch.Detach();                         // stops watching it
//   }
//
// A uv_prepare handle runs right before the loop blocks for I/O (about to wait) and a uv_check
// handle after its poll phase (woke up); timers, pending, idle and close callbacks lie between
// a check and the next prepare, inside a run-loop pass. I/O callbacks do not: libuv calls them
// inside its poll phase, after the wait returns and before the check handles, with no hook
// between (libuv 1.44, Unix): a stall in one is not in a pass, and is not a hang (a known gap).
// Both handles are unreferenced: they never keep the loop alive. Their callbacks run on the
// loop's thread, so the marks act on that thread's watch (hangwatch/threads.h): the thread that
// called Start(), or the one Attach() registered with a role.
//
// What a pass dispatches (the hang's context.source and context.callback, hangwatch/context.h).
// libuv calls no hook per callback, so the check handle, as the pass begins, looks at what the pass
// will run before its next wait: when the loop has something to run at once (uv_backend_timeout()
// is 0; otherwise nothing is looked at), it walks the loop's handles (uv_walk) for active timers
// due now (uv_timer_get_due_in() is 0) and active idle handles. One such handle: the pass says its
// type name (uv_handle_type_name(): "timer", "idle") and its callback (the handle's timer_cb /
// idle_cb: uv.h's members, under the same names on Unix and Windows since libuv 1.0, with no
// getter). Several: "2 timers due", "1 timer and 1 idle handle due", and no callback (which one
// stalls is not known). None: the pass says nothing.
// Limits: a timer that falls due between the check and the timers' phase is not counted; callbacks
// of I/O, of pending writes, of close, of async handles and of the program's own check and prepare
// handles are not named; the walk costs a few ns per handle of the loop, on the passes that run
// timers or idle handles (every pass, while an idle handle is active).
#ifndef HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_
#define HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_

#include <uv.h>

#include <string_view>

#include "hangwatch/threads.h"

namespace hangwatch {

class UvLoopWatch {
 public:
  UvLoopWatch() = default;
  // Detaches. The handles are closed with uv_close; if the loop is still alive, it must run
  // once more (uv_run with UV_RUN_NOWAIT) before the loop is closed.
  ~UvLoopWatch();
  UvLoopWatch(const UvLoopWatch&) = delete;
  UvLoopWatch& operator=(const UvLoopWatch&) = delete;

  // Starts watching `loop`; call it on the thread that runs the loop, which must be watched
  // already (the thread that called hangwatch::Start(), or one that called WatchThread()).
  // Marks the thread busy: what runs before the loop's first wait belongs to a pass. Returns 0
  // or a negative libuv error code.
  int Attach(uv_loop_t* loop);
  // The same, first watching the calling thread under `role` (hangwatch::WatchThread(role,
  // options); on a thread already watched, such as the main one, it keeps its watch).
  int Attach(uv_loop_t* loop, std::string_view role, const ThreadOptions& options = {});
  // Stops the handles, closes them, and marks the thread idle; stops watching the thread when
  // Attach() registered it. Call it on the loop's thread. Idempotent.
  void Detach();
  bool attached() const { return loop_ != nullptr; }

 private:
  uv_loop_t* loop_ = nullptr;
  uv_prepare_t prepare_{};
  uv_check_t check_{};
  ThreadWatch thread_watch_;  // the loop thread's, when Attach() registered it
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_LIBUV_HANGWATCH_UV_H_
