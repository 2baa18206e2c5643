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
//
// What a pass dispatches (the hang's context.source and context.callback, hangwatch/context.h).
// GLib has no public hook per dispatch: it calls each source's dispatch function through the
// source's GSourceFuncs table. The tables of GLib's own source types are public variables
// (g_timeout_funcs, g_idle_funcs, g_io_watch_funcs, g_child_watch_funcs, g_unix_signal_funcs,
// g_unix_fd_source_funcs), so the first watch wraps their dispatch entries, for every context
// and for the life of the process (never unwrapped: another thread may be inside a wrapper).
// The wrapping is glib_source_wrap.h's, which the preload shim shares for unmodified programs; a
// table it already wrapped (a program that embeds this adapter and runs under the shim) is left
// as it is: a dispatch is told once.
// While such a source dispatches on a watched thread, the pass says: the source's name
// (g_source_set_name, copied into a per-thread buffer, cut to 127 bytes, since the callback may
// rename or destroy its source), else its type ("GTimeoutSource", "GIdleSource", "GIOWatch",
// "GChildWatchSource", "GUnixSignalSource", "GUnixFDSource"); the callback is the function the
// source calls (g_source_set_callback's; a closure's marshaller for g_source_set_closure).
// When the dispatch returns, the pass says nothing again (or the enclosing dispatch's source,
// for a callback that iterates a context itself). On an unwatched thread a wrapper costs one
// thread-local load.
// Limits: sources of other types - GIO's GSocketSource and GCancellable sources, GDK's and
// GTK's event and frame-clock sources, Qt's, any custom GSourceFuncs - have no public table to
// wrap: their dispatches leave the pass without a source (a program can call
// hangwatch::SetPassSource() in its own dispatch functions). A GLib that does not use these
// tables for its own sources would leave every pass without one.
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
