// The calling thread watched under a role, registered by an adapter from the loop's own
// callbacks (a GLib poll function, a Qt event dispatcher's signal): the thread that runs the
// loop is the one watched, whichever thread created the adapter, and an adapter needs no hook
// of its own for "a thread started".
//
// One registration per thread, shared by every adapter on it (the first role wins, as
// WatchThread() itself decides: a thread already watched, or the thread that called Start(),
// keeps its watch). The ThreadWatch lives in a thread_local, so a thread that exits stops being
// watched; UnwatchLoopThread() stops it earlier (an adapter removed on its loop's thread).
// Registering is tried once per thread: a thread refused a slot is not asked again at every
// pass.
#ifndef HANGWATCH_INTEGRATIONS_LOOP_THREAD_LOOP_THREAD_WATCH_H_
#define HANGWATCH_INTEGRATIONS_LOOP_THREAD_LOOP_THREAD_WATCH_H_

#include <string_view>

#include "hangwatch/threads.h"

namespace hangwatch::loop_thread {

struct Registration {
  bool tried = false;
  ThreadWatch watch;
};

// Inline, so one per thread across the program's adapters.
inline Registration& ThisThread() {
  thread_local Registration registration;
  return registration;
}

// Watches the calling thread under `role` unless it was tried before. Cheap after the first
// call: a thread_local flag.
inline void WatchLoopThread(std::string_view role, const ThreadOptions& options) {
  Registration& r = ThisThread();
  if (r.tried) return;
  r.tried = true;
  r.watch = WatchThread(role, options);
}

// Ends the pass under way and stops the watch WatchLoopThread() started on this thread (none:
// only the pass ends, on whatever watch the thread has). The next WatchLoopThread() on the
// thread registers it again.
inline void UnwatchLoopThread() {
  EndWork();
  Registration& r = ThisThread();
  r.watch.Stop();
  r.tried = false;
}

}  // namespace hangwatch::loop_thread

#endif  // HANGWATCH_INTEGRATIONS_LOOP_THREAD_LOOP_THREAD_WATCH_H_
