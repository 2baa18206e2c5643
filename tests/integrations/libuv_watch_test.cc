// A libuv program with a deliberate stall: the stall is reported with the stalling callback on
// top of the dominant stack; seconds of idle in the loop report nothing. A pass that runs one
// due timer says "timer" and the timer's callback; one that runs two says how many, and no
// callback.
#include <gtest/gtest.h>
#include <uv.h>

#include <string>
#include <vector>

#include "busy_wait.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_uv.h"
#include "pass_source.h"

namespace {

using hangwatch::testing::PassSource;
using hangwatch::testing::PassSourceOfThisThread;

extern "C" __attribute__((noinline)) void StallInLibuvCallback(uv_timer_t*) {
  HANGWATCH_BUSY_WAIT_MS(600);
}

hangwatch::Config TestConfig() {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(200);
  config.sample_interval = std::chrono::milliseconds(20);
  config.log_hangs = false;
  return config;
}

bool OnTop(const hangwatch::HangRecord& h, const std::string& function) {
  const hangwatch::Stack* d = h.dominant();
  return d != nullptr && !d->frames.empty() &&
         d->frames[0].symbol.find(function) != std::string::npos;
}

TEST(LibuvWatch, StallIsReportedWithTheCallbackOnTopAndIdleIsNot) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  ASSERT_TRUE(hangwatch::Start(TestConfig()).ok());
  uv_timer_t stall, quit;
  uv_timer_init(&loop, &stall);
  uv_timer_init(&loop, &quit);
  uv_timer_start(&stall, StallInLibuvCallback, 50, 0);
  // After the stall, the loop idles for 2.5 s (12x the threshold) before it is stopped.
  uv_timer_start(
      &quit, [](uv_timer_t* t) { uv_stop(t->loop); }, 50 + 600 + 2500, 0);

  hangwatch::UvLoopWatch watch;
  ASSERT_EQ(watch.Attach(&loop), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  watch.Detach();
  hangwatch::Stop();  // closes the hangs whose pass ended

  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  ASSERT_EQ(hangs.size(), 1u) << "the idle seconds must not be a hang";
  const auto& h = hangs[0];
  EXPECT_GE(h.duration_ms, 550u);
  EXPECT_LT(h.duration_ms, 1500u);
  EXPECT_EQ(h.hang_class, hangwatch::HangClass::kBusy);
  EXPECT_TRUE(OnTop(h, "StallInLibuvCallback")) << hangwatch::ToJsonLine(h);
  EXPECT_GE(hangwatch::GetStats().passes_seen, 2u);

  uv_close(reinterpret_cast<uv_handle_t*>(&stall), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&quit), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(LibuvWatch, AttachTwiceIsRefusedAndHandlesDoNotKeepTheLoopAlive) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  hangwatch::UvLoopWatch watch;
  ASSERT_EQ(watch.Attach(&loop), 0);
  EXPECT_EQ(watch.Attach(&loop), UV_EBUSY);
  // Nothing but the watch's (unreferenced) handles: uv_run returns at once.
  EXPECT_EQ(uv_run(&loop, UV_RUN_DEFAULT), 0);
  watch.Detach();
  EXPECT_FALSE(watch.attached());
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

PassSource g_thumbnail_pass;
PassSource g_pair_pass;

extern "C" __attribute__((noinline)) void StallingThumbnailTimer(uv_timer_t*) {
  g_thumbnail_pass = PassSourceOfThisThread();
  HANGWATCH_BUSY_WAIT_MS(300);
}

extern "C" __attribute__((noinline)) void OneOfAPair(uv_timer_t* timer) {
  if (timer->data != nullptr) g_pair_pass = PassSourceOfThisThread();
  uv_stop(timer->loop);
}

TEST(LibuvWatch, APassSaysTheTimerItRunsAndItsCallback) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  ASSERT_TRUE(hangwatch::Start(TestConfig()).ok());
  uv_timer_t thumbnail, first, second;
  uv_timer_init(&loop, &thumbnail);
  uv_timer_init(&loop, &first);
  uv_timer_init(&loop, &second);
  first.data = &first;  // records; `second` only stops the loop
  uv_timer_start(&thumbnail, StallingThumbnailTimer, 20, 0);
  // Both due in the same pass, well after the stall.
  uv_timer_start(&first, OneOfAPair, 500, 0);
  uv_timer_start(&second, OneOfAPair, 500, 0);

  hangwatch::UvLoopWatch watch;
  ASSERT_EQ(watch.Attach(&loop), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  watch.Detach();
  hangwatch::Stop();

  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].context.source, "timer") << hangwatch::ToJsonLine(hangs[0]);
  EXPECT_NE(hangs[0].context.callback.find("StallingThumbnailTimer"), std::string::npos)
      << hangwatch::ToJsonLine(hangs[0]);

  ASSERT_TRUE(g_thumbnail_pass.stamped);
  EXPECT_EQ(g_thumbnail_pass.source, "timer");
  EXPECT_EQ(g_thumbnail_pass.callback, reinterpret_cast<const void*>(&StallingThumbnailTimer));
  ASSERT_TRUE(g_pair_pass.stamped);
  EXPECT_EQ(g_pair_pass.source, "2 timers due");
  EXPECT_EQ(g_pair_pass.callback, nullptr);
  // Timers that ran when due still say how late they were (about 0: known, not -1). How late
  // exactly is the scheduler's business on a loaded machine; the late case is below.
  EXPECT_GE(g_thumbnail_pass.queued_ns, 0);
  EXPECT_GE(g_pair_pass.queued_ns, 0);

  for (uv_timer_t* t : {&thumbnail, &first, &second}) {
    uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

PassSource g_late_pass;

extern "C" __attribute__((noinline)) void StallFor400Ms(uv_timer_t*) {
  HANGWATCH_BUSY_WAIT_MS(400);
}
extern "C" __attribute__((noinline)) void LateTimer(uv_timer_t* timer) {
  g_late_pass = PassSourceOfThisThread();
  uv_stop(timer->loop);
}

// A timer due while another callback held the loop runs late, and its pass says how late
// (queued_ns, from the timer's due time in the loop's clock): the lag records' queued + running
// histogram counts it so.
TEST(LibuvWatch, ATimerDueDuringAStallIsQueuedForTheStallsRest) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  hangwatch::Config config = TestConfig();
  config.time_every_pass = true;
  ASSERT_TRUE(hangwatch::Start(config).ok());
  uv_timer_t stall, late;
  uv_timer_init(&loop, &stall);
  uv_timer_init(&loop, &late);
  uv_timer_start(&stall, StallFor400Ms, 10, 0);
  uv_timer_start(&late, LateTimer, 60, 0);  // due 50 ms into the 400 ms stall
  hangwatch::UvLoopWatch watch;
  ASSERT_EQ(watch.Attach(&loop), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  watch.Detach();
  hangwatch::Stop();
  ASSERT_TRUE(g_late_pass.stamped);
  EXPECT_EQ(g_late_pass.source, "timer");
  // Due at 60 ms, run after the stall ended at 410 ms or later: at least 300 ms late.
  EXPECT_GE(g_late_pass.queued_ns, 300'000'000) << g_late_pass.queued_ns;
  for (uv_timer_t* t : {&stall, &late}) uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
