// A GLib program with a deliberate stall: the stall is reported with the stalling callback on
// top of the dominant stack; seconds of idle in the main loop report nothing. A pass says which
// source it dispatches: a named source by its name (a copy: renaming it mid-dispatch changes
// nothing), an unnamed one by its type, with the callback; after the dispatch, nothing.
#include <glib.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "busy_wait.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_glib.h"
#include "pass_source.h"

namespace {

using hangwatch::testing::PassSource;
using hangwatch::testing::PassSourceOfThisThread;

extern "C" __attribute__((noinline)) gboolean StallInGlibCallback(gpointer) {
  HANGWATCH_BUSY_WAIT_MS(600);
  return G_SOURCE_REMOVE;
}

TEST(GlibWatch, StallIsReportedWithTheCallbackOnTopAndIdleIsNot) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(200);
  config.sample_interval = std::chrono::milliseconds(20);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());

  GMainContext* context = g_main_context_new();
  GMainLoop* loop = g_main_loop_new(context, FALSE);
  auto add_timeout = [&](guint ms, GSourceFunc fn, gpointer data) {
    GSource* s = g_timeout_source_new(ms);
    g_source_set_callback(s, fn, data, nullptr);
    g_source_attach(s, context);
    g_source_unref(s);
  };
  add_timeout(50, StallInGlibCallback, nullptr);
  // After the stall, the loop idles for 2.5 s (12x the threshold) before it quits.
  add_timeout(
      50 + 600 + 2500,
      [](gpointer l) {
        g_main_loop_quit(static_cast<GMainLoop*>(l));
        return G_SOURCE_REMOVE;
      },
      loop);
  {
    hangwatch::GMainContextWatch watch(context);
    ASSERT_TRUE(watch.active());
    hangwatch::GMainContextWatch second(context);
    EXPECT_FALSE(second.active()) << "one watched context at a time";
    g_main_loop_run(loop);
  }
  hangwatch::Stop();
  g_main_loop_unref(loop);
  g_main_context_unref(context);

  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  ASSERT_EQ(hangs.size(), 1u) << "the idle seconds must not be a hang";
  const auto& h = hangs[0];
  EXPECT_GE(h.duration_ms, 550u);
  EXPECT_LT(h.duration_ms, 1500u);
  EXPECT_EQ(h.hang_class, hangwatch::HangClass::kBusy);
  const hangwatch::Stack* d = h.dominant();
  ASSERT_NE(d, nullptr);
  ASSERT_FALSE(d->frames.empty());
  EXPECT_NE(d->frames[0].symbol.find("StallInGlibCallback"), std::string::npos)
      << hangwatch::ToJsonLine(h);
}

// What the passes said, read from inside the callbacks (the loop's thread).
struct Seen {
  PassSource thumbnail;          // the named timeout's, at the start of its callback
  PassSource thumbnail_renamed;  // the same, after the callback renamed its source
  PassSource idle;               // an unnamed idle source's
  PassSource after_idle;         // a custom source's, dispatched after the idle in its pass
  GMainLoop* loop = nullptr;
};

// A source type of the program's own (no public table to wrap): always ready; its dispatch
// records what the pass says, then quits the loop.
struct RecordingSource {
  GSource base;
  Seen* seen;
};
gboolean AlwaysReady(GSource*, gint* timeout) {
  *timeout = 0;
  return TRUE;
}
gboolean RecordAndQuit(GSource* source, GSourceFunc, gpointer) {
  Seen* seen = reinterpret_cast<RecordingSource*>(source)->seen;
  seen->after_idle = PassSourceOfThisThread();
  g_main_loop_quit(seen->loop);
  return G_SOURCE_REMOVE;
}
GSourceFuncs g_recording_funcs = {AlwaysReady, nullptr, RecordAndQuit, nullptr, nullptr, nullptr};

extern "C" __attribute__((noinline)) gboolean UnnamedIdle(gpointer data) {
  static_cast<Seen*>(data)->idle = PassSourceOfThisThread();
  return G_SOURCE_REMOVE;
}

// Stalls; then queues an unnamed idle and a custom source, both ready in the next iteration at
// the same priority: the idle dispatches first, the custom source after it, in one pass.
extern "C" __attribute__((noinline)) gboolean ThumbnailTimer(gpointer data) {
  auto* seen = static_cast<Seen*>(data);
  seen->thumbnail = PassSourceOfThisThread();
  g_source_set_name(g_main_current_source(), "renamed-while-dispatching");
  seen->thumbnail_renamed = PassSourceOfThisThread();
  HANGWATCH_BUSY_WAIT_MS(300);
  GMainContext* context = g_main_loop_get_context(seen->loop);
  GSource* idle = g_idle_source_new();
  g_source_set_priority(idle, G_PRIORITY_DEFAULT);
  g_source_set_callback(idle, UnnamedIdle, seen, nullptr);
  g_source_attach(idle, context);
  g_source_unref(idle);
  GSource* custom = g_source_new(&g_recording_funcs, sizeof(RecordingSource));
  reinterpret_cast<RecordingSource*>(custom)->seen = seen;
  g_source_attach(custom, context);
  g_source_unref(custom);
  return G_SOURCE_REMOVE;
}

TEST(GlibWatch, APassSaysTheSourceItDispatchesAndItsCallback) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.sample_interval = std::chrono::milliseconds(20);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());

  GMainContext* context = g_main_context_new();
  Seen seen;
  seen.loop = g_main_loop_new(context, FALSE);
  {
    hangwatch::GMainContextWatch watch(context);
    ASSERT_TRUE(watch.active());
    GSource* thumbnail = g_timeout_source_new(20);
    g_source_set_name(thumbnail, "thumbnail-timer");
    g_source_set_callback(thumbnail, ThumbnailTimer, &seen, nullptr);
    g_source_attach(thumbnail, context);
    g_source_unref(thumbnail);
    g_main_loop_run(seen.loop);
  }
  hangwatch::Stop();
  g_main_loop_unref(seen.loop);
  g_main_context_unref(context);

  // The stall is a hang that says so, its callback symbolized.
  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].context.source, "thumbnail-timer") << hangwatch::ToJsonLine(hangs[0]);
  EXPECT_NE(hangs[0].context.callback.find("ThumbnailTimer"), std::string::npos)
      << hangwatch::ToJsonLine(hangs[0]);

  ASSERT_TRUE(seen.thumbnail.stamped);
  EXPECT_EQ(seen.thumbnail.source, "thumbnail-timer");
  EXPECT_EQ(seen.thumbnail.callback, reinterpret_cast<const void*>(&ThumbnailTimer));
  EXPECT_EQ(seen.thumbnail_renamed.source, "thumbnail-timer") << "the name is a copy";
  ASSERT_TRUE(seen.idle.stamped);
  EXPECT_EQ(seen.idle.source, "GIdleSource");
  EXPECT_EQ(seen.idle.callback, reinterpret_cast<const void*>(&UnnamedIdle));
  // A source the adapter does not see, after the idle in the same pass: not the idle's.
  EXPECT_EQ(seen.after_idle.source, "");
  EXPECT_EQ(seen.after_idle.callback, nullptr);
}

// A timer that falls due while another callback blocks the loop runs late: its hang says how
// long it had waited (queued_ms), from the source's ready time, and the blocker's hang has none.
gboolean BlockTheLoop(gpointer) {
  g_usleep(400 * 1000);
  return G_SOURCE_REMOVE;
}

gboolean LateTimer(gpointer data) {
  g_usleep(300 * 1000);
  g_main_loop_quit(static_cast<GMainLoop*>(data));
  return G_SOURCE_REMOVE;
}

TEST(GlibWatch, ATimerThatRanLateSaysHowLongItWaited) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.sample_interval = std::chrono::milliseconds(20);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());

  GMainContext* context = g_main_context_new();
  GMainLoop* loop = g_main_loop_new(context, FALSE);
  {
    hangwatch::GMainContextWatch watch(context);
    ASSERT_TRUE(watch.active());
    GSource* late = g_timeout_source_new(50);  // due 50 ms in, while the idle below blocks
    g_source_set_name(late, "late-timer");
    g_source_set_callback(late, LateTimer, loop, nullptr);
    g_source_attach(late, context);
    g_source_unref(late);
    GSource* blocker = g_idle_source_new();
    g_source_set_callback(blocker, BlockTheLoop, nullptr, nullptr);
    g_source_attach(blocker, context);
    g_source_unref(blocker);
    g_main_loop_run(loop);
  }
  hangwatch::Stop();
  g_main_loop_unref(loop);
  g_main_context_unref(context);

  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  const hangwatch::HangRecord* timer = nullptr;
  for (const hangwatch::HangRecord& h : hangs) {
    if (h.context.source == "late-timer") timer = &h;
    if (h.context.source == "GIdleSource") {
      EXPECT_EQ(h.queued_ms, -1) << "an idle has no due time";
    }
  }
  ASSERT_NE(timer, nullptr) << (hangs.empty() ? "no hang" : hangwatch::ToJsonLine(hangs[0]));
  // Due at 50 ms, dispatched after the 400 ms block: about 350 ms late.
  EXPECT_GE(timer->queued_ms, 300) << hangwatch::ToJsonLine(*timer);
  EXPECT_LT(timer->queued_ms, 2000) << hangwatch::ToJsonLine(*timer);
}

}  // namespace
