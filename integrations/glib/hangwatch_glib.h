// hangwatch for GLib: feeds the agent the run-loop activity of a GMainContext, on whichever
// thread iterates it.
//
//   hangwatch::Start(config);                          // the main thread
//   hangwatch::GMainContextWatch watch(nullptr);       // nullptr: the default context
//   g_main_loop_run(loop);
//
//   void Worker() {                                    // a context on a thread of its own
//     GMainContext* context = g_main_context_new();
//     g_main_context_push_thread_default(context);
//     hangwatch::GMainContextWatch watch(context, "dbus-worker");
//     g_main_loop_run(loop);                           // watched under "dbus-worker"
//   }                                                  // `watch` destroyed on its thread
//
// The watch wraps the context's poll function (g_main_context_set_poll_func): the time spent
// inside poll is the only time the context waits, so entering it is "about to wait" and
// leaving it "woke up"; preparing, checking and dispatching sources is a run-loop pass. The
// poll function runs on the thread that iterates the context, so the marks act on that
// thread's watch (hangwatch/threads.h). With a role, the first poll on a thread registers it
// (hangwatch::WatchThread(role), integrations/loop_thread): the watch may be created on any
// thread, before or after the loop starts; a thread that is already watched (the main thread,
// a thread that called WatchThread() itself) keeps its watch. Without a role, the thread must
// be watched already (as the main thread is).
//
// A poll function installed before the watch is kept and called through; the destructor
// restores it. Up to kMaxWatchedContexts contexts at a time, one watch per context.
#ifndef HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_
#define HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_

#include <glib.h>

#include <string_view>

#include "hangwatch/threads.h"

namespace hangwatch {

class GMainContextWatch {
 public:
  // As many as the agent watches threads by default (Config::max_watched_threads).
  static constexpr int kMaxWatchedContexts = 64;

  // Starts watching `context` (nullptr: the global default context) on the thread that
  // already is watched. Marks the calling thread busy until the context first polls.
  explicit GMainContextWatch(GMainContext* context);
  // Starts watching `context` on whichever thread iterates it, registering that thread under
  // `role` at its first poll (roles are cut to kMaxRoleBytes). Marks no thread busy.
  GMainContextWatch(GMainContext* context, std::string_view role,
                    const ThreadOptions& options = {});
  // Restores the previous poll function. On the thread that iterated the context (the main
  // thread, for the first form): ends the pass under way, and stops the thread's watch when
  // this watch registered it. Destroyed on another thread, it ends nothing: the loop's thread
  // stays watched until it exits, in the pass its last poll began, so destroy the watch on the
  // loop's thread once its loop has returned.
  ~GMainContextWatch();
  GMainContextWatch(const GMainContextWatch&) = delete;
  GMainContextWatch& operator=(const GMainContextWatch&) = delete;

  // False when the context was already watched or every slot was taken (this watch then does
  // nothing).
  bool active() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_
