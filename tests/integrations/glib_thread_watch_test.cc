// A GMainContext iterated by a worker thread (its thread-default context, run by a GMainLoop):
// a source callback that blocks 300 ms is one hang of that thread, under the watch's role; the
// main thread, idle meanwhile, has none. Once with the watch made on the worker, once with it
// made on the main thread for the worker's context (the worker registers at its first poll).
#include <glib.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "hang_waiter.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_glib.h"

namespace {

using hangwatch::testing::HangWaiter;
using hangwatch::testing::ThisThreadTid;

std::atomic<int64_t> g_blocked_tid{0};

extern "C" __attribute__((noinline)) gboolean BlockInWorkerCallback(gpointer) {
  g_blocked_tid = ThisThreadTid();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return G_SOURCE_REMOVE;
}

hangwatch::Config TestConfig() {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  return config;
}

// The worker: `context` as its thread-default context, a GMainLoop on it, a callback that
// blocks 50 ms in. `watch_here`: the watch is made on this thread.
void RunWorker(GMainContext* context, GMainLoop* loop, bool watch_here) {
  g_main_context_push_thread_default(context);
  GSource* source = g_timeout_source_new(50);
  g_source_set_callback(source, BlockInWorkerCallback, nullptr, nullptr);
  g_source_attach(source, context);
  g_source_unref(source);
  if (watch_here) {
    hangwatch::GMainContextWatch watch(context, "glib-worker");
    EXPECT_TRUE(watch.active());
    g_main_loop_run(loop);
  } else {
    g_main_loop_run(loop);
  }
  g_main_context_pop_thread_default(context);
}

void ExpectOneHangOfTheWorker(bool watch_on_worker) {
  g_blocked_tid = 0;
  ASSERT_TRUE(hangwatch::Start(TestConfig()).ok());
  HangWaiter waiter;
  GMainContext* context = g_main_context_new();
  GMainLoop* loop = g_main_loop_new(context, FALSE);
  {
    std::optional<hangwatch::GMainContextWatch> watch;
    if (!watch_on_worker) {
      watch.emplace(context, "glib-worker");
      ASSERT_TRUE(watch->active());
      hangwatch::GMainContextWatch again(context, "other");
      EXPECT_FALSE(again.active()) << "one watch per context";
    }
    std::thread worker(RunWorker, context, loop, watch_on_worker);
    const bool reported = waiter.WaitFor(1);
    g_main_loop_quit(loop);  // thread-safe: wakes the context
    worker.join();
    ASSERT_TRUE(reported) << "no hang within the deadline";
  }
  hangwatch::Stop();
  g_main_loop_unref(loop);
  g_main_context_unref(context);

  const std::vector<hangwatch::HangRecord> hangs = waiter.Hangs();
  ASSERT_EQ(hangs.size(), 1u);
  const hangwatch::HangRecord& h = hangs[0];
  EXPECT_EQ(h.tid, g_blocked_tid.load()) << hangwatch::ToJsonLine(h);
  EXPECT_NE(h.tid, ThisThreadTid());
  EXPECT_EQ(h.thread_role, "glib-worker");
  EXPECT_EQ(h.hang_class, hangwatch::HangClass::kBlocked);
  EXPECT_GE(h.duration_ms, 250u);
  EXPECT_LT(h.duration_ms, 1500u);
}

TEST(GlibThreadWatch, ABlockingCallbackOnAWorkersContextIsAHangOfThatThread) {
  ExpectOneHangOfTheWorker(/*watch_on_worker=*/true);
}

TEST(GlibThreadWatch, AWatchMadeOnTheMainThreadRegistersTheThreadThatPolls) {
  ExpectOneHangOfTheWorker(/*watch_on_worker=*/false);
}

}  // namespace
