// End to end: what a hang says its pass was serving, through the public API (ScopedLabel,
// SetPassSource) with the real watchdog and sampler. Every wait is on an agent event.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch/threads.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"
#include "tests/sanitizers.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::TestConfig;

thread_local volatile uint64_t g_spin;
HW_TEST_KEEP_FRAME void SpinFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) g_spin = g_spin + 1;
}

HW_TEST_KEEP_FRAME void DecodeThumbnailCallback() { SpinFor(300ms); }

// One pass: three labels deep, dispatching a named source through a callback.
void LabelledPass() {
  BeginWork();
  SetPassSource("thumbnail-timer", reinterpret_cast<const void*>(&DecodeThumbnailCallback));
  ScopedLabel request("request");
  ScopedLabel gallery("gallery.open");
  ScopedLabel decode("thumbnail.decode");
  DecodeThumbnailCallback();
  EndWork();
}

void ExpectLabelledContext(const HangRecord& h) {
  EXPECT_EQ(h.context.label, "thumbnail.decode");
  EXPECT_EQ(h.context.label_path,
            (std::vector<std::string>{"request", "gallery.open", "thumbnail.decode"}));
  EXPECT_EQ(h.context.source, "thumbnail-timer");
  EXPECT_NE(h.context.callback.find("DecodeThumbnailCallback"), std::string::npos)
      << h.context.callback;
}

TEST(ContextE2eTest, NestedLabelsAndTheSourceGoIntoTheHang) {
  HangCollector collector;
  ASSERT_TRUE(Start(TestConfig()).ok());
  LabelledPass();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  ExpectLabelledContext(collector.hangs()[0]);
  EXPECT_FALSE(collector.hangs()[0].input.known);  // no display connection in this process
  EXPECT_FALSE(collector.hangs()[0].perceived.has_value());
}

TEST(ContextE2eTest, LabelsPoppedBeforeTheStallAreNotItsContext) {
  HangCollector collector;
  ASSERT_TRUE(Start(TestConfig()).ok());
  BeginWork();
  { ScopedLabel quick("parse"); }
  SpinFor(300ms);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  EXPECT_TRUE(collector.hangs()[0].context.label_path.empty());
  EXPECT_TRUE(collector.hangs()[0].context.source.empty());
}

TEST(ContextE2eTest, AWatchedThreadsLabelsAreItsOwn) {
  HangCollector collector;
  ASSERT_TRUE(Start(TestConfig()).ok());
  ScopedLabel main_label("main.work");  // the main thread's: not the render thread's hang
  std::thread render([] {
    ThreadWatch watch = WatchThread("render", {.threshold = 100ms});
    ASSERT_TRUE(watch.watching());
    Heartbeat();
    ScopedLabel frame("frame.draw");
    SpinFor(300ms);
    Heartbeat();
  });
  ASSERT_TRUE(collector.WaitFor(1));
  render.join();
  Stop();
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(h.thread_role, "render");
  EXPECT_EQ(h.context.label_path, std::vector<std::string>{"frame.draw"});
}

TEST(ContextE2eTest, ALabelOnAnUnwatchedThreadDoesNothing) {
  ASSERT_TRUE(Start(TestConfig()).ok());
  std::thread other([] {
    EXPECT_EQ(internal::t_run_loop_state, nullptr);
    ScopedLabel label("elsewhere");
    SetPassSource("nothing");
  });
  other.join();
  EXPECT_EQ(internal::g_main_loop.context.label_depth.load(), 0u);
  Stop();
}

TEST(ContextE2eTest, ContextOffKeepsNoContext) {
  HangCollector collector;
  Config c = TestConfig();
  c.context = false;
  ASSERT_TRUE(Start(c).ok());
  LabelledPass();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  EXPECT_TRUE(collector.hangs()[0].context.empty());
}

// A child forked inside labelled work keeps the labels its thread pushed: its own agent's hang
// names them.
TEST(ContextE2eTest, LabelsCrossAFork) {
  if (HW_TEST_ASAN) GTEST_SKIP() << "ASan's allocator is not fork-safe here";
  ScopedLabel outer("worker.job");
  const pid_t pid = fork();
  if (pid == 0) {
    HangCollector collector;
    if (!Start(TestConfig()).ok()) _exit(10);
    BeginWork();
    {
      ScopedLabel inner("job.step");
      SpinFor(300ms);
    }
    EndWork();
    if (!collector.WaitFor(1)) _exit(11);
    Stop();
    const HangRecord h = collector.hangs()[0];
    _exit(h.context.label_path == std::vector<std::string>{"worker.job", "job.step"} ? 0 : 12);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hangwatch
