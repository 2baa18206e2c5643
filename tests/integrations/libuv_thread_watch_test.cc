// A libuv loop on an I/O thread of its own, attached with a role: a timer callback that blocks
// 300 ms is one hang of that thread, under the role; the main thread, idle meanwhile, has none;
// after Detach() the thread is no longer watched.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "hang_waiter.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_uv.h"

namespace {

using hangwatch::testing::HangWaiter;
using hangwatch::testing::ThisThreadTid;

std::atomic<int64_t> g_blocked_tid{0};

extern "C" __attribute__((noinline)) void BlockInIoThreadTimer(uv_timer_t*) {
  g_blocked_tid = ThisThreadTid();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(LibuvThreadWatch, ABlockingCallbackOnAnIoThreadsLoopIsAHangOfThatThread) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());
  HangWaiter waiter;

  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  uv_async_t stop;  // the main thread stops the loop through it
  ASSERT_EQ(uv_async_init(&loop, &stop, [](uv_async_t* a) { uv_stop(a->loop); }), 0);
  std::atomic<int> attach_rc{1};
  std::thread io([&] {
    uv_timer_t timer;
    uv_timer_init(&loop, &timer);
    uv_timer_start(&timer, BlockInIoThreadTimer, 50, 0);
    hangwatch::UvLoopWatch watch;
    attach_rc = watch.Attach(&loop, "uv-io");
    uv_run(&loop, UV_RUN_DEFAULT);
    watch.Detach();
    uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&stop), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
  });
  const bool reported = waiter.WaitFor(1);
  uv_async_send(&stop);
  io.join();
  EXPECT_EQ(uv_loop_close(&loop), 0);
  hangwatch::Stop();
  ASSERT_EQ(attach_rc.load(), 0);
  ASSERT_TRUE(reported) << "no hang within the deadline";

  const std::vector<hangwatch::HangRecord> hangs = waiter.Hangs();
  ASSERT_EQ(hangs.size(), 1u);
  const hangwatch::HangRecord& h = hangs[0];
  EXPECT_EQ(h.tid, g_blocked_tid.load()) << hangwatch::ToJsonLine(h);
  EXPECT_NE(h.tid, ThisThreadTid());
  EXPECT_EQ(h.thread_role, "uv-io");
  EXPECT_EQ(h.hang_class, hangwatch::HangClass::kBlocked);
  EXPECT_GE(h.duration_ms, 250u);
  EXPECT_LT(h.duration_ms, 1500u);
}

}  // namespace
