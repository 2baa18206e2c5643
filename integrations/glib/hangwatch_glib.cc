#include "hangwatch_glib.h"

#include <atomic>

#include "hangwatch/hangwatch.h"

namespace hangwatch {
namespace {

// The poll function the watch replaced; called through. One watch at a time.
GPollFunc g_previous = nullptr;
std::atomic<bool> g_active{false};

gint WatchedPoll(GPollFD* fds, guint nfds, gint timeout) {
  hangwatch::AboutToWait();
  const gint result = g_previous(fds, nfds, timeout);
  hangwatch::WokeUp();  // relaxed stores: errno as the poll left it
  return result;
}

}  // namespace

GMainContextWatch::GMainContextWatch(GMainContext* context) {
  if (g_active.exchange(true)) return;
  context_ = context != nullptr ? g_main_context_ref(context)
                                : g_main_context_ref(g_main_context_default());
  g_previous = g_main_context_get_poll_func(context_);
  if (g_previous == nullptr) g_previous = g_poll;
  g_main_context_set_poll_func(context_, WatchedPoll);
  hangwatch::BeginWork();
}

GMainContextWatch::~GMainContextWatch() {
  if (context_ == nullptr) return;
  g_main_context_set_poll_func(context_, g_previous);
  g_main_context_unref(context_);
  hangwatch::EndWork();
  g_active.store(false);
}

}  // namespace hangwatch
