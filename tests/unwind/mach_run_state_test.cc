// Mach run states (thread_basic_info) to the scheduler letters every capture reports.
#include "unwind/mach/run_state.h"

#include <gtest/gtest.h>

namespace hangwatch::unwind::mach {
namespace {

TEST(MachRunState, MirrorsThreadInfoValues) {
  // <mach/thread_info.h>: TH_STATE_RUNNING 1 ... TH_STATE_HALTED 5, TH_FLAGS_IDLE 0x2.
  EXPECT_EQ(kThStateRunning, 1);
  EXPECT_EQ(kThStateStopped, 2);
  EXPECT_EQ(kThStateWaiting, 3);
  EXPECT_EQ(kThStateUninterruptible, 4);
  EXPECT_EQ(kThStateHalted, 5);
  EXPECT_EQ(kThFlagsIdle, 2);
}

TEST(MachRunState, MapsToProcLetters) {
  EXPECT_EQ(SchedStateFromRunState(kThStateRunning, 0), 'R');
  EXPECT_EQ(SchedStateFromRunState(kThStateWaiting, 0), 'S');
  EXPECT_EQ(SchedStateFromRunState(kThStateUninterruptible, 0), 'D');
  EXPECT_EQ(SchedStateFromRunState(kThStateStopped, 0), 'T');
  EXPECT_EQ(SchedStateFromRunState(kThStateHalted, 0), 'X');
}

TEST(MachRunState, IdleFlagWinsAndUnknownIsQuestionMark) {
  EXPECT_EQ(SchedStateFromRunState(kThStateRunning, kThFlagsIdle), 'I');
  EXPECT_EQ(SchedStateFromRunState(kThStateWaiting, 0x1 /* TH_FLAGS_SWAPPED */), 'S');
  EXPECT_EQ(SchedStateFromRunState(0, 0), '?');
  EXPECT_EQ(SchedStateFromRunState(6, 0), '?');
  EXPECT_EQ(SchedStateFromRunState(-1, 0), '?');
}

}  // namespace
}  // namespace hangwatch::unwind::mach
