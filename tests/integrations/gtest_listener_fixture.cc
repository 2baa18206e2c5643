// A test program using the hangwatch GoogleTest listener, run by gtest_listener_test: one test
// that stays well within the budget and one that stalls its main thread for 600 ms.
#include <gtest/gtest.h>

#include "busy_wait.h"
#include "hangwatch_gtest.h"

extern "C" __attribute__((noinline)) void StallInsideTest() { HANGWATCH_BUSY_WAIT_MS(600); }

TEST(Fixture, Quick) { EXPECT_EQ(1 + 1, 2); }

TEST(Fixture, Stalls) { StallInsideTest(); }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  hangwatch::testing::InstallHangListener(std::chrono::milliseconds(200));  // the one line
  return RUN_ALL_TESTS();
}
