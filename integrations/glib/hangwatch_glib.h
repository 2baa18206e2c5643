// hangwatch for GLib: feeds the agent the run-loop activity of a GMainContext.
//
//   hangwatch::Start(config);                          // on the context's thread
//   hangwatch::GMainContextWatch watch(nullptr);       // nullptr: the default context
//   g_main_loop_run(loop);
//
// The watch wraps the context's poll function (g_main_context_set_poll_func): the time spent
// inside poll is the only time the context waits, so entering it is "about to wait" and
// leaving it "woke up"; preparing, checking and dispatching sources is a run-loop pass. A poll
// function installed before the watch is kept and called through; the destructor restores it.
// One context at a time (the agent watches one thread).
#ifndef HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_
#define HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_

#include <glib.h>

namespace hangwatch {

class GMainContextWatch {
 public:
  // Starts watching `context` (nullptr: the global default context). Marks the thread busy
  // until the context first polls.
  explicit GMainContextWatch(GMainContext* context);
  // Restores the previous poll function and marks the thread idle.
  ~GMainContextWatch();
  GMainContextWatch(const GMainContextWatch&) = delete;
  GMainContextWatch& operator=(const GMainContextWatch&) = delete;

  // False when another watch was already active (this one then does nothing).
  bool active() const { return context_ != nullptr; }

 private:
  GMainContext* context_ = nullptr;
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_GLIB_HANGWATCH_GLIB_H_
