// An asio io_context run by two threads under one AsioWatch: a handler that blocks 300 ms is
// one hang, of the thread that ran it, under the watch's role; the other thread, which runs
// the handlers posted meanwhile, has none.
#include "hangwatch_asio.h"  // first: it includes asio

#include <gtest/gtest.h>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "hang_waiter.h"
#include "hangwatch/hangwatch.h"

namespace {

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

}  // namespace
