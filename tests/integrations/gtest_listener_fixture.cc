// A test program using the hangwatch GoogleTest listener, run by gtest_listener_test: one test
// that stays well within the budget, one that stalls its main thread for 600 ms, and tests that
// set budgets of their own (ScopedTestBudget), some of which they break.
#include <gtest/gtest.h>

#include "busy_wait.h"
#include "hangwatch_gtest.h"

extern "C" __attribute__((noinline)) void StallInsideTest() { HANGWATCH_BUSY_WAIT_MS(600); }
extern "C" __attribute__((noinline)) void ShortStall() { HANGWATCH_BUSY_WAIT_MS(120); }
extern "C" __attribute__((noinline)) void SlowFrame() { HANGWATCH_BUSY_WAIT_MS(80); }
extern "C" __attribute__((noinline)) void QuickFrame() { HANGWATCH_BUSY_WAIT_MS(1); }

// An event loop of quick + slow passes (every 10th pass is slow while slow ones remain): the
// wait after each one ends its pass and begins the next. Slow passes are far longer than a
// loaded machine stretches a quick one, and shorter than the listener's 200 ms budget.
void RunFrames(int quick, int slow) {
  for (int i = 0; quick + slow > 0; ++i) {
    if (slow > 0 && (i % 10 == 9 || quick == 0)) {
      SlowFrame();
      --slow;
    } else {
      QuickFrame();
      --quick;
    }
    hangwatch::AboutToWait();
    hangwatch::WokeUp();
  }
}

using hangwatch::testing::ScopedTestBudget;
using hangwatch::testing::TestBudget;
using namespace std::chrono_literals;

TEST(Fixture, Quick) { EXPECT_EQ(1 + 1, 2); }

TEST(Fixture, Stalls) { StallInsideTest(); }

TEST(Budget, StricterFailsAShortStall) {
  ScopedTestBudget budget(TestBudget().MaxPass(50ms));
  ShortStall();  // within the listener's 200 ms, not within this test's 50
}

TEST(Budget, LooserAllowsALongStall) {
  ScopedTestBudget budget(TestBudget().MaxPass(2000ms));
  StallInsideTest();
}

TEST(Budget, P99OverBudgetNamesTheSlowPass) {
  ScopedTestBudget budget(TestBudget().MaxP99Ms(10));
  RunFrames(95, 5);  // 101 passes with the last: the 99th percentile is a slow one
}

TEST(Budget, TooManySlowPasses) {
  ScopedTestBudget budget(TestBudget().MaxSlowPasses(50, 2));
  RunFrames(20, 5);
}

TEST(Budget, WithinItsBudget) {
  ScopedTestBudget budget(TestBudget().MaxP99Ms(150).MaxSlowPasses(50, 10));
  RunFrames(50, 5);
}

TEST(Budget, UnknownSlowPassDuration) {
  ScopedTestBudget budget(TestBudget().MaxSlowPasses(20, 1));
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  hangwatch::testing::InstallHangListener(std::chrono::milliseconds(200));  // the one line
  return RUN_ALL_TESTS();
}
