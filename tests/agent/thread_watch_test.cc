// End to end: threads other than the main one watched through hangwatch/threads.h (a render
// thread that beats, an I/O loop, a pool's tasks), with the real watchdog and sampler. Every
// wait is on an agent event (a hang reported, a thread followed), never a sleep.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/core/agent_internal.h"
#include "agent/core/thread_monitors.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch/threads.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::TestConfig;
using testing::WaitUntil;

thread_local volatile uint64_t g_spin;  // each thread's own: no race to report under TSan

HW_TEST_KEEP_FRAME void SpinFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) g_spin = g_spin + 1;
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// A one-shot signal between threads.
class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class ThreadWatchTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Start(TestConfig()).ok()); }
  void TearDown() override { Stop(); }
};

// The program: a main loop, a render thread that beats once a frame and an I/O loop;
// each stalls once, one after the other. Three hangs, each of its own thread with its class.
TEST_F(ThreadWatchTest, MainRenderAndIoThreadEachStallOnceAndEachHangIsItsThreads) {
  HangCollector collector;
  std::atomic<pid_t> render_tid{0}, io_tid{0};
  std::atomic<int> turn{0};  // 0: main stalls, 1: render, 2: io, 3: done
  std::thread render([&] {
    pthread_setname_np(pthread_self(), "RenderThread");
    ThreadWatch watch = WatchThread("render", {.threshold = 100ms});
    ASSERT_TRUE(watch.watching());
    render_tid = Tid();
    while (turn.load() < 3) {
      Heartbeat();
      const bool slow_frame = turn.load() == 1;
      SpinFor(slow_frame ? 350ms : 2ms);
      if (slow_frame) turn = 2;
    }
  });
  std::thread io([&] {
    pthread_setname_np(pthread_self(), "io-loop");
    ThreadWatch watch = WatchThread("io");
    ASSERT_TRUE(watch.watching());
    io_tid = Tid();
    while (turn.load() < 3) {
      std::this_thread::sleep_for(1ms);  // the loop's wait: idle
      WorkScope pass;
      if (turn.load() == 2) {
        std::this_thread::sleep_for(350ms);  // a blocked pass
        turn = 3;
      }
    }
  });
  ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 2; }));
  {
    WorkScope pass;
    SpinFor(350ms);
  }
  ASSERT_TRUE(collector.WaitFor(1));
  turn = 1;
  // Until the I/O loop's hang. The render thread's 2 ms frames may cross its 100 ms threshold
  // too when it is kept off the CPU (TSan, a loaded machine): real hangs of that thread, but not
  // the ones this test is about (left out below), so no count of hangs can tell the end.
  const bool all = WaitUntil(
      [&] {
        for (const HangRecord& h : collector.hangs()) {
          if (h.thread_role == "io") return true;
        }
        return false;
      },
      std::chrono::seconds(20));
  if (!all) turn = 3;
  render.join();
  io.join();

  ASSERT_TRUE(all);
  Stop();
  std::vector<HangRecord> hangs = collector.hangs();
  // A render frame descheduled past the threshold, not its 350 ms slow frame (TSan in CI: 4 hangs).
  std::erase_if(
      hangs, [](const HangRecord& h) { return h.thread_role == "render" && h.duration_ms < 300; });
  ASSERT_EQ(hangs.size(), 3u);
  EXPECT_EQ(hangs[0].thread_role, "main");
  EXPECT_EQ(hangs[0].tid, Tid());
  EXPECT_EQ(hangs[0].hang_class, HangClass::kBusy);
  EXPECT_EQ(hangs[1].thread_role, "render");
  EXPECT_EQ(hangs[1].tid, render_tid.load());
  EXPECT_EQ(hangs[1].thread_name, "RenderThread");
  EXPECT_EQ(hangs[1].threshold_ms, 100u);
  EXPECT_EQ(hangs[1].hang_class, HangClass::kBusy);
  EXPECT_EQ(hangs[2].thread_role, "io");
  EXPECT_EQ(hangs[2].tid, io_tid.load());
  EXPECT_EQ(hangs[2].thread_name, "io-loop");
  EXPECT_EQ(hangs[2].hang_class, HangClass::kBlocked);
  if (unwind::ProcSyscallLinesAreOurs()) {  // an emulator names no system call
    EXPECT_NE(hangs[2].cause.summary.find("on thread io ("), std::string::npos)
        << hangs[2].cause.summary;
  }
  for (const HangRecord& h : hangs) {
    EXPECT_GE(h.duration_ms, 250u) << h.thread_role;
    EXPECT_LE(h.duration_ms, 1000u) << h.thread_role;
    EXPECT_GT(h.samples, 0u) << h.thread_role;
  }
}

TEST_F(ThreadWatchTest, APoolsTaskLongerThanItsThresholdIsAHangItsIdleTimeNever) {
  HangCollector collector;
  static const TaskPool pool("decoder", 100ms);
  Latch idle_done;
  std::thread worker([&] {
    struct OpenAtExit {  // whatever happens here, the test thread is not left waiting
      Latch* latch;
      ~OpenAtExit() { latch->Open(); }
    } open_at_exit{&idle_done};
    { TaskScope task(pool); }  // registers the thread
    ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 1; }));
    std::this_thread::sleep_for(400ms);  // between tasks: idle, never a hang
    idle_done.Open();                    // (again at exit: Open is idempotent)
    TaskScope task(pool);
    std::this_thread::sleep_for(300ms);
  });
  idle_done.Wait();
  ASSERT_TRUE(collector.WaitFor(1));
  worker.join();
  std::vector<HangRecord> hangs = collector.hangs();
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].thread_role, "decoder");
  EXPECT_LT(hangs[0].duration_ms, 390u);  // the task only, not the idle time before it
}

TEST_F(ThreadWatchTest, APausedThreadIsNeverAHangAndResumingStartsAFreshPass) {
  HangCollector collector;
  std::thread render([&] {
    ThreadWatch watch = WatchThread("render", {.threshold = 100ms});
    Heartbeat();
    ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 1; }));
    watch.Pause();
    std::this_thread::sleep_for(400ms);  // minimised: no beats
    watch.Resume();
    SpinFor(250ms);  // the first frame after resuming is slow
    Heartbeat();
    watch.Pause();
  });
  ASSERT_TRUE(collector.WaitFor(1));
  render.join();
  Stop();
  std::vector<HangRecord> hangs = collector.hangs();
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].thread_role, "render");
  EXPECT_LT(hangs[0].duration_ms, 390u);  // from Resume(), not from the pause
}

TEST_F(ThreadWatchTest, WatchingIsANoOpOnTheMainThreadTwiceOnOneThreadAndPastTheLimit) {
  EXPECT_FALSE(WatchThread("ui").watching());  // the main thread keeps role "main"
  Stop();
  std::mutex mu;
  std::vector<LagRecord> lags;
  const int lag_id = AddLagCallback([&](const LagRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    lags.push_back(r);
  });
  Config config = TestConfig();
  config.max_watched_threads = 2;
  config.time_every_pass = true;
  config.lag_interval = 0ms;  // one record, at Stop()
  ASSERT_TRUE(Start(config).ok());
  { WorkScope pass; }  // a pass, so that the main thread's interval has a record
  std::atomic<int> watching{0};
  Latch all_asked, release;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      ThreadWatch watch = WatchThread("worker");
      if (watch.watching()) {
        EXPECT_FALSE(WatchThread("again").watching());
        ++watching;
      }
      release.Wait();
    });
  }
  // Every thread has decided: the one refused is counted by the agent as soon as it asked, the
  // two watched only once their own second WatchThread() came back (waiting for the refusal
  // alone read `watching` while a watched thread was still between the two: 1, not 2).
  ASSERT_TRUE(WaitUntil([&] {
    return GetStats().threads_not_watched + static_cast<uint64_t>(watching.load()) == 3;
  }));
  EXPECT_EQ(GetStats().threads_not_watched, 1u);
  EXPECT_EQ(watching.load(), 2);
  EXPECT_EQ(GetStats().threads_watched, 2u);
  release.Open();
  for (auto& t : threads) t.join();
  ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 0; }));
  EXPECT_EQ(GetStats().threads_watched, 0u);
  Stop();
  RemoveLagCallback(lag_id);
  std::lock_guard<std::mutex> lock(mu);
  const auto main = std::find_if(lags.begin(), lags.end(),
                                 [](const LagRecord& r) { return r.thread_role == "main"; });
  ASSERT_NE(main, lags.end());
  EXPECT_EQ(main->threads_not_watched, 1u) << "the lag record says a thread was left out";
}

TEST_F(ThreadWatchTest, AnUnwatchedThreadsCallsLeaveTheMainThreadsPassesAlone) {
  const uint64_t before = GetStats().passes_seen;
  std::thread t([] {
    for (int i = 0; i < 1000; ++i) {
      BeginWork();
      EndWork();
      Heartbeat();
    }
    { TaskScope no_pool_yet(TaskPool("", 0ms)); }  // registers: a pool thread
  });
  t.join();
  EXPECT_EQ(GetStats().passes_seen, before);
}

TEST_F(ThreadWatchTest, AThreadsWatchOutlivesStopAndStart) {
  HangCollector collector;
  Latch restarted;
  std::thread io([&] {
    ThreadWatch watch = WatchThread("io");
    restarted.Wait();
    ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 1; }));
    WorkScope pass;
    std::this_thread::sleep_for(300ms);
  });
  Stop();
  ASSERT_TRUE(Start(TestConfig()).ok());
  restarted.Open();
  ASSERT_TRUE(collector.WaitFor(1));
  io.join();
  EXPECT_EQ(collector.hangs()[0].thread_role, "io");
}

#if defined(__SANITIZE_ADDRESS__)
#define HANGWATCH_SKIP_UNDER_ASAN_FORK() GTEST_SKIP() << "ASan's allocator is not fork-safe here"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HANGWATCH_SKIP_UNDER_ASAN_FORK() GTEST_SKIP() << "ASan's allocator is not fork-safe here"
#endif
#endif
#ifndef HANGWATCH_SKIP_UNDER_ASAN_FORK
#define HANGWATCH_SKIP_UNDER_ASAN_FORK()
#endif

std::atomic<bool> g_never{false};
HW_TEST_KEEP_FRAME void RenderStuckForever() {
  while (!g_never.load(std::memory_order_relaxed)) g_spin = g_spin + 1;
}

// A hang of a watched thread that kills the process (kill -9 while it runs) is read back by the
// next Start() from that thread's own open-hang file, as that thread's.
TEST(ThreadWatchFatalTest, AFatalHangOfANonMainThreadIsReadBackAsThatThreads) {
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/hangwatch_thread_fatal_" + std::to_string(getpid()) + ".bin";
  unlink(path.c_str());
  unlink(agent::ThreadOpenHangPath(path, 0).c_str());
  const pid_t pid = fork();
  if (pid == 0) {
    Config c = TestConfig();
    c.open_hang_path = path;
    if (!Start(c).ok()) _exit(10);
    std::thread([] {
      pthread_setname_np(pthread_self(), "compositor");
      ThreadWatch watch = WatchThread("render");
      Heartbeat();
      RenderStuckForever();
    }).join();
    _exit(11);
  }
  ASSERT_GT(pid, 0);
  HangRecord seen;
  std::string error;
  const bool open = WaitUntil(
      [&] {
        for (const std::string& p : agent::ThreadOpenHangPaths(path)) {
          if (agent::ReadOpenHangFile(p, &seen, &error) == agent::OpenHangReadStatus::kFound &&
              seen.samples >= 3) {
            return true;
          }
        }
        return false;
      },
      20s);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(open) << error;

  HangCollector collector;
  Config c = TestConfig();
  c.open_hang_path = path;
  ASSERT_TRUE(Start(c).ok());
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  const HangRecord h = collector.hangs()[0];
  EXPECT_TRUE(h.fatal);
  EXPECT_EQ(h.pid, pid);
  EXPECT_EQ(h.thread_role, "render");
  EXPECT_EQ(h.thread_name, "compositor");
  EXPECT_NE(h.tid, pid);
  EXPECT_GE(h.samples, 3u);
  EXPECT_TRUE(agent::ThreadOpenHangPaths(path).empty()) << "read once, then removed";
  unlink(path.c_str());
}

// A forked child has only the thread that forked: a pass its parent's other watched thread was
// in must not become the child's hang (the thread does not exist there).
TEST(ThreadWatchForkTest, AForkedChildNeverReportsItsParentsOtherThreads) {
  // The child starts an agent (allocates) after a fork from a process with other threads
  // running: glibc's allocator is fork-safe, clang 14's ASan allocator is not (a child hung).
  HANGWATCH_SKIP_UNDER_ASAN_FORK();
  ASSERT_TRUE(Start(TestConfig()).ok());
  Latch in_pass, release;
  std::thread render([&] {
    ThreadWatch watch = WatchThread("render");
    Heartbeat();  // a pass runs until the next beat, which never comes before the fork
    in_pass.Open();
    release.Wait();
    watch.Pause();
  });
  in_pass.Wait();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!Start(TestConfig()).ok()) _exit(10);
    std::this_thread::sleep_for(500ms);  // five thresholds of the parent's thread's pass
    Stop();                              // a hang still open would be closed and counted here
    _exit(GetStats().hangs == 0 ? 0 : 11);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  release.Open();
  render.join();
  Stop();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child reported a hang of a thread it does not have";
}

TEST(ThreadWatchLagTest, EachWatchedThreadHasLagRecordsOfItsOwnPasses) {
  std::mutex mu;
  std::vector<LagRecord> records;
  const int id = AddLagCallback([&](const LagRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(r);
  });
  Config config = TestConfig();
  config.time_every_pass = true;
  config.lag_interval = 0ms;  // one record per thread, at Stop()
  ASSERT_TRUE(Start(config).ok());
  for (int i = 0; i < 5; ++i) {
    WorkScope pass;
  }
  std::thread render([&] {
    ThreadWatch watch = WatchThread("render");
    ASSERT_TRUE(WaitUntil([] { return agent::FollowedThreads() == 1; }));
    for (int i = 0; i < 31; ++i) {
      Heartbeat();
      SpinFor(1ms);
    }
    watch.Pause();  // the 31st frame ends
    Stop();         // the slot's last interval is reported while the thread still holds it
  });
  render.join();
  RemoveLagCallback(id);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(records.size(), 2u);
  const LagRecord* main = records[0].thread_role == "main" ? &records[0] : &records[1];
  const LagRecord* other = main == &records[0] ? &records[1] : &records[0];
  EXPECT_EQ(main->passes.passes(), 5u);
  EXPECT_EQ(other->thread_role, "render");
  EXPECT_EQ(other->passes.passes(), 31u);
  EXPECT_GT(other->tid, 0);
  EXPECT_NE(other->tid, main->tid);
}

}  // namespace
}  // namespace hangwatch
