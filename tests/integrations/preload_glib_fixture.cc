// An unmodified GLib program (it links GLib, not hangwatch) for preload_glib_source_test: a
// GMainLoop whose timeout source, named "thumbnail-timer", stalls its callback for 600 ms, then
// quits the loop and prints "done".
#include <glib.h>

#include <cstdio>

namespace {
GMainLoop* g_loop = nullptr;
}  // namespace

// External linkage and a plain name: the hang's callback is symbolized to it.
gboolean StallThumbnailTimer(gpointer /*user_data*/) {
  g_usleep(600 * 1000);
  g_main_loop_quit(g_loop);
  return G_SOURCE_REMOVE;
}

int main() {
  g_loop = g_main_loop_new(nullptr, FALSE);
  GSource* timer = g_timeout_source_new(100);
  g_source_set_name(timer, "thumbnail-timer");
  g_source_set_callback(timer, StallThumbnailTimer, nullptr, nullptr);
  g_source_attach(timer, nullptr);
  g_source_unref(timer);
  g_main_loop_run(g_loop);
  g_main_loop_unref(g_loop);
  std::puts("done");
  return 0;
}
