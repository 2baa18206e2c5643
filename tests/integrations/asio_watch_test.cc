// An asio io_context run by two threads under one AsioWatch: a handler that blocks 300 ms is
// one hang, of the thread that ran it, under the watch's role; the other thread, which runs
// the handlers posted meanwhile, has none. A handler's pass says what it dispatches: the
// operation ("asio executor_op" for a posted function, "asio wait_handler" for a timer's) and
// its completion function, or the location an ASIO_HANDLER_LOCATION in it names.
#include "hangwatch_asio.h"  // first: it includes asio

#include <gtest/gtest.h>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hang_waiter.h"
#include "hangwatch/hangwatch.h"
#include "pass_source.h"

namespace {

using hangwatch::testing::PassSource;
using hangwatch::testing::PassSourceOfThisThread;

using hangwatch::testing::HangWaiter;
using hangwatch::testing::ThisThreadTid;

extern "C" __attribute__((noinline)) void BlockInAsioHandler(std::atomic<int64_t>* tid) {
  tid->store(ThisThreadTid());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(AsioWatch, ABlockingHandlerIsAHangOfTheThreadThatRanItOnly) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());
  HangWaiter waiter;

  asio::io_context io;
  hangwatch::AsioWatch watch(io, "asio-pool");
  ASSERT_TRUE(watch.active());
  hangwatch::AsioWatch again(io, "other");
  EXPECT_FALSE(again.active()) << "one watch per io_context";

  std::atomic<int64_t> blocked_tid{0};
  std::atomic<int> ticks_elsewhere{0};  // short handlers run by the other thread meanwhile
  asio::steady_timer tick(io);
  // Set before the work guard goes: the ticks stop rescheduling themselves (a cancel() alone
  // races with a tick already completed and queued, which then rescheduled forever and left
  // the io threads running: the test hung in join()).
  std::atomic<bool> stopping{false};
  std::function<void()> schedule_tick = [&] {
    tick.expires_after(std::chrono::milliseconds(10));
    tick.async_wait([&](const asio::error_code& ec) {
      if (ec || stopping.load()) return;
      const int64_t blocked = blocked_tid.load();
      if (blocked != 0 && blocked != ThisThreadTid()) ++ticks_elsewhere;
      schedule_tick();
    });
  };
  schedule_tick();
  asio::post(io, [&] { BlockInAsioHandler(&blocked_tid); });

  auto guard = asio::make_work_guard(io);
  std::thread a([&] { io.run(); });
  std::thread b([&] { io.run(); });
  const bool reported = waiter.WaitFor(1);
  stopping = true;
  asio::post(io, [&] { tick.cancel(); });
  guard.reset();
  a.join();
  b.join();
  hangwatch::Stop();
  ASSERT_TRUE(reported) << "no hang within the deadline";

  const std::vector<hangwatch::HangRecord> hangs = waiter.Hangs();
  ASSERT_EQ(hangs.size(), 1u);
  const hangwatch::HangRecord& h = hangs[0];
  EXPECT_EQ(h.tid, blocked_tid.load()) << hangwatch::ToJsonLine(h);
  EXPECT_EQ(h.thread_role, "asio-pool");
  EXPECT_EQ(h.hang_class, hangwatch::HangClass::kBlocked);
  EXPECT_GE(h.duration_ms, 250u);
  EXPECT_LT(h.duration_ms, 1500u);
  EXPECT_GT(ticks_elsewhere.load(), 5) << "the other thread ran handlers during the block";
}

extern "C" __attribute__((noinline)) void DecodeThumbnail() {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(AsioWatch, AHandlersPassSaysItsOperationOrTheLocationItNames) {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());
  asio::io_context io;
  hangwatch::AsioWatch watch(io, "asio-io");
  ASSERT_TRUE(watch.active());

  PassSource posted, in_location, after_location, timer;
  int location_line = 0;
  asio::post(io, [&] {
    posted = PassSourceOfThisThread();
    {
      location_line = __LINE__ + 1;
      ASIO_HANDLER_LOCATION((__FILE__, __LINE__, "DecodeThumbnail"));
      in_location = PassSourceOfThisThread();
      DecodeThumbnail();  // stalls: a hang
    }
    after_location = PassSourceOfThisThread();
  });
  asio::steady_timer wait(io, std::chrono::milliseconds(1));
  wait.async_wait([&](const asio::error_code&) { timer = PassSourceOfThisThread(); });
  io.run();
  hangwatch::Stop();

  const std::string location =
      "asio_watch_test.cc:" + std::to_string(location_line) + " DecodeThumbnail";
  // The stall inside the location's scope is a hang that names it; the callback is the posted
  // operation's completion function.
  const std::vector<hangwatch::HangRecord> hangs = hangwatch::RecentHangs();
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].context.source, location) << hangwatch::ToJsonLine(hangs[0]);
  EXPECT_NE(hangs[0].context.callback.find("executor_op"), std::string::npos)
      << hangwatch::ToJsonLine(hangs[0]);
  EXPECT_NE(hangs[0].context.callback.find("do_complete"), std::string::npos)
      << hangwatch::ToJsonLine(hangs[0]);

  ASSERT_TRUE(posted.stamped);
  EXPECT_EQ(posted.source, "asio executor_op");
  EXPECT_NE(posted.callback, nullptr) << "the operation's completion function";
  ASSERT_TRUE(in_location.stamped);
  EXPECT_EQ(in_location.source, location);
  EXPECT_EQ(in_location.callback, posted.callback);
  EXPECT_EQ(after_location.source, posted.source);
  ASSERT_TRUE(timer.stamped);
  EXPECT_EQ(timer.source, "asio wait_handler");
  EXPECT_NE(timer.callback, nullptr);
  EXPECT_NE(timer.callback, posted.callback);
}

}  // namespace
