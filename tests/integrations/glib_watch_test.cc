// A GLib program with a deliberate stall: the stall is reported with the stalling callback on
// top of the dominant stack; seconds of idle in the main loop report nothing.
#include <glib.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "busy_wait.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_glib.h"

namespace {

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

}  // namespace
