// A real Qt application (QApplication on the offscreen platform, no display) under one
// hangwatch::QtWatch: a QThread worker whose event loop blocks 500 ms in a slot and a GUI
// thread busy for 400 ms are exactly two hangs, each of its own thread: the worker's under its
// objectName(), blocked; the GUI thread's under "main", busy. A QThread that runs no event loop
// (its run() sleeps 300 ms) is not watched: no hang. Each stalled pass says the event it
// delivers: the worker's a queued call to its named object, the GUI thread's a named QTimer's
// timer event. Built for each Qt major found (qt_watch_test: Qt 5, qt6_watch_test: Qt 6).
#include <gtest/gtest.h>
#include <QtCore/QMetaObject>
#include <QtCore/QObject>
#include <QtCore/QThread>
#include <QtCore/QTimer>
#include <QtWidgets/QApplication>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "busy_wait.h"
#include "hang_waiter.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch_qt.h"
#include "pass_source.h"

namespace {

using hangwatch::testing::PassSource;
using hangwatch::testing::PassSourceOfThisThread;

using hangwatch::testing::HangWaiter;
using hangwatch::testing::ThisThreadTid;

std::atomic<int64_t> g_worker_tid{0};
PassSource g_worker_pass;  // what each stalled pass said, read on its own thread
PassSource g_gui_pass;

extern "C" __attribute__((noinline)) void BlockInWorkerSlot() {
  g_worker_tid = ThisThreadTid();
  g_worker_pass = PassSourceOfThisThread();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

extern "C" __attribute__((noinline)) void BusyOnGuiThread() {
  g_gui_pass = PassSourceOfThisThread();
  HANGWATCH_BUSY_WAIT_MS(400);
}

// A QThread whose run() does its work without an event loop.
class NoLoopThread : public QThread {
 protected:
  void run() override { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }
};

const hangwatch::HangRecord* OfRole(const std::vector<hangwatch::HangRecord>& hangs,
                                    const std::string& role) {
  for (const auto& h : hangs) {
    if (h.thread_role == role) return &h;
  }
  return nullptr;
}

TEST(QtWatch, AWorkerLoopAndTheGuiThreadEachHangUnderTheirOwnThread) {
  setenv("QT_QPA_PLATFORM", "offscreen", 1);
  static int argc = 1;
  static char name[] = "qt_watch_test";
  static char* argv[] = {name, nullptr};
  QApplication app(argc, argv);

  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  ASSERT_TRUE(hangwatch::Start(config).ok());
  // Two hangs reported: the GUI loop quits (a queued call: the callback runs on the watchdog).
  std::atomic<int> reported{0};
  HangWaiter waiter([&] {
    if (++reported == 2) QMetaObject::invokeMethod(&app, [] { QCoreApplication::quit(); });
  });
  int exit_code = 0;
  {
    hangwatch::QtWatch watch;
    ASSERT_TRUE(watch.active());
    EXPECT_FALSE(hangwatch::QtWatch().active()) << "one QtWatch at a time";

    QThread worker_thread;
    worker_thread.setObjectName("qt-worker");
    QObject worker;  // lives in the worker thread: its queued calls run in that thread's loop
    worker.setObjectName("thumbnail-worker");
    worker.moveToThread(&worker_thread);
    worker_thread.start();
    NoLoopThread no_loop;
    no_loop.setObjectName("no-loop");
    no_loop.start();

    QTimer stall;
    stall.setObjectName("stall-timer");
    stall.setSingleShot(true);
    QObject::connect(&stall, &QTimer::timeout, &app, [&] {
      QMetaObject::invokeMethod(
          &worker, [] { BlockInWorkerSlot(); }, Qt::QueuedConnection);
      BusyOnGuiThread();
    });
    stall.start(50);
    QTimer::singleShot(20'000, &app, [] { QCoreApplication::exit(1); });  // the deadline
    exit_code = app.exec();
    worker_thread.quit();
    worker_thread.wait();
    no_loop.wait();
  }
  hangwatch::Stop();
  ASSERT_EQ(exit_code, 0) << "not two hangs within the deadline: " << reported.load();

  const std::vector<hangwatch::HangRecord> hangs = waiter.Hangs();
  ASSERT_EQ(hangs.size(), 2u);
  const hangwatch::HangRecord* w = OfRole(hangs, "qt-worker");
  ASSERT_NE(w, nullptr) << hangwatch::ToJsonLine(hangs[0]) << "\n"
                        << hangwatch::ToJsonLine(hangs[1]);
  EXPECT_EQ(w->tid, g_worker_tid.load());
  EXPECT_EQ(w->hang_class, hangwatch::HangClass::kBlocked);
  EXPECT_GE(w->duration_ms, 450u);
  EXPECT_LT(w->duration_ms, 2000u);
  const hangwatch::HangRecord* g = OfRole(hangs, "main");
  ASSERT_NE(g, nullptr) << hangwatch::ToJsonLine(hangs[0]) << "\n"
                        << hangwatch::ToJsonLine(hangs[1]);
  EXPECT_EQ(g->tid, ThisThreadTid());
  EXPECT_EQ(g->hang_class, hangwatch::HangClass::kBusy);
  EXPECT_GE(g->duration_ms, 350u);
  EXPECT_LT(g->duration_ms, 2000u);

  EXPECT_EQ(w->context.source, "MetaCall to QObject \"thumbnail-worker\"");
  EXPECT_EQ(g->context.source, "Timer to QTimer \"stall-timer\"");
  ASSERT_TRUE(g_worker_pass.stamped);
  EXPECT_EQ(g_worker_pass.source, "MetaCall to QObject \"thumbnail-worker\"");
  ASSERT_TRUE(g_gui_pass.stamped);
  EXPECT_EQ(g_gui_pass.source, "Timer to QTimer \"stall-timer\"");
}

}  // namespace
