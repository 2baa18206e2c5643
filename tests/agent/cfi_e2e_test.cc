// The agent with issue 6's sampling path (real watchdog, ProcFirstSampler, CFI over the stack
// copy): a main thread stalled in a libc function without frame pointers is reported with its
// caller, and one sleeping in nanosleep is read through /proc without a single EINTR.
#include <time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "gtest/gtest.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"

namespace hangwatch {
namespace {

using testing::HangCollector;
using testing::StackMentions;
using testing::TestConfig;

std::atomic<bool> g_release{false};
std::atomic<int> g_eintr{0};
uint64_t g_base_samples = 0;
constexpr uint64_t kSamples = 15;

bool EnoughSamples() { return GetStats().samples >= g_base_samples + kSamples; }

[[gnu::noinline, gnu::noipa]] int SpinningCompare(const void* a, const void* b) {
  while (!EnoughSamples()) {
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
[[gnu::noinline, gnu::noipa]] void QsortCaller() {
  int values[4] = {3, 1, 2, 0};
  qsort(values, 4, sizeof(int), SpinningCompare);
}
[[gnu::noinline, gnu::noipa]] void NanosleepCaller() {
  while (!EnoughSamples()) {
    timespec ts{0, 50 * 1000 * 1000};
    if (nanosleep(&ts, nullptr) != 0 && errno == EINTR) g_eintr.fetch_add(1);
  }
}

bool AnyStackMentions(const HangRecord& h, const char* name) {
  for (const Stack& s : h.stacks) {
    if (StackMentions(s, name, 8)) return true;
  }
  return false;
}

class CfiE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Config c = TestConfig();
    ASSERT_GT(c.stack_copy_bytes, 0u) << "CFI needs the stack copy";
    ASSERT_TRUE(Start(c).ok());
    g_base_samples = GetStats().samples;
  }
  void TearDown() override { Stop(); }
};

TEST_F(CfiE2eTest, StallInQsortComparatorShowsTheCaller) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  {
    WorkScope pass;
    QsortCaller();
  }
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  ASSERT_FALSE(h.stacks.empty());
  EXPECT_TRUE(AnyStackMentions(h, "SpinningCompare"));
  // qsort (libc, no frame pointers) sits between the comparator and its caller: only CFI
  // finds the caller.
  EXPECT_TRUE(AnyStackMentions(h, "QsortCaller"));
}

TEST_F(CfiE2eTest, SleepingMainThreadIsReadWithoutEintr) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  g_eintr = 0;
  {
    WorkScope pass;
    NanosleepCaller();
  }
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  EXPECT_EQ(g_eintr.load(), 0);
  EXPECT_TRUE(AnyStackMentions(h, "NanosleepCaller"));
}

}  // namespace
}  // namespace hangwatch
