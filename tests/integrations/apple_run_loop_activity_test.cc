// The CFRunLoop activity -> run-loop API mapping that the Apple observer glue applies.
#include "integrations/apple/run_loop_activity.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace hangwatch::integrations::apple {
namespace {

TEST(RunLoopActivity, MirrorsCoreFoundationBits) {
  // CFRunLoop.h: Entry 1<<0, BeforeTimers 1<<1, BeforeSources 1<<2, BeforeWaiting 1<<5,
  // AfterWaiting 1<<6, Exit 1<<7.
  EXPECT_EQ(kCFRunLoopEntry, 0x01u);
  EXPECT_EQ(kCFRunLoopBeforeTimers, 0x02u);
  EXPECT_EQ(kCFRunLoopBeforeSources, 0x04u);
  EXPECT_EQ(kCFRunLoopBeforeWaiting, 0x20u);
  EXPECT_EQ(kCFRunLoopAfterWaiting, 0x40u);
  EXPECT_EQ(kCFRunLoopExit, 0x80u);
}

TEST(RunLoopActivity, WakingIsBusySleepingIsIdle) {
  EXPECT_EQ(ActionForActivity(kCFRunLoopAfterWaiting), RunLoopAction::kBeginWork);
  EXPECT_EQ(ActionForActivity(kCFRunLoopBeforeWaiting), RunLoopAction::kEndWork);
  EXPECT_EQ(ActionForActivity(kCFRunLoopEntry), RunLoopAction::kBeginWork);
}

TEST(RunLoopActivity, StepsInsideAPassChangeNothing) {
  EXPECT_EQ(ActionForActivity(kCFRunLoopBeforeTimers), RunLoopAction::kNone);
  EXPECT_EQ(ActionForActivity(kCFRunLoopBeforeSources), RunLoopAction::kNone);
  EXPECT_EQ(ActionForActivity(kCFRunLoopExit), RunLoopAction::kNone);
}

TEST(RunLoopActivity, UnknownOrCombinedBitsChangeNothing) {
  EXPECT_EQ(ActionForActivity(0), RunLoopAction::kNone);
  EXPECT_EQ(ActionForActivity(1u << 3), RunLoopAction::kNone);
  EXPECT_EQ(ActionForActivity(kCFRunLoopAfterWaiting | kCFRunLoopBeforeWaiting),
            RunLoopAction::kNone);
  EXPECT_EQ(ActionForActivity(0x0FFFFFFFu), RunLoopAction::kNone);  // kCFRunLoopAllActivities
}

TEST(RunLoopActivity, ObservedActivitiesAreExactlyThoseWithAnAction) {
  for (uint32_t bit = 0; bit < 32; ++bit) {
    const uint32_t activity = 1u << bit;
    const bool observed = (kObservedActivities & activity) != 0;
    EXPECT_EQ(observed, ActionForActivity(activity) != RunLoopAction::kNone) << "bit " << bit;
  }
}

// One run-loop iteration as CF reports it, replayed through the mapping into a busy/idle
// state: the thread counts as busy from waking until it goes back to sleep, and a modal loop
// run from a callout sleeps (idle) and resumes the outer pass busy.
TEST(RunLoopActivity, ReplayedIterationsTrackBusyAndIdle) {
  bool busy = false;
  int passes = 0;
  auto apply = [&](uint32_t activity) {
    switch (ActionForActivity(activity)) {
      case RunLoopAction::kBeginWork:
        busy = true;
        ++passes;
        break;
      case RunLoopAction::kEndWork:
        busy = false;
        break;
      case RunLoopAction::kNone:
        break;
    }
  };
  apply(kCFRunLoopEntry);
  EXPECT_TRUE(busy);
  apply(kCFRunLoopBeforeTimers);
  apply(kCFRunLoopBeforeSources);
  EXPECT_TRUE(busy);
  apply(kCFRunLoopBeforeWaiting);
  EXPECT_FALSE(busy);
  apply(kCFRunLoopAfterWaiting);
  EXPECT_TRUE(busy);
  // A callout runs a nested (modal) loop that sleeps, wakes and exits.
  apply(kCFRunLoopEntry);
  apply(kCFRunLoopBeforeWaiting);
  EXPECT_FALSE(busy);
  apply(kCFRunLoopAfterWaiting);
  apply(kCFRunLoopExit);
  EXPECT_TRUE(busy);  // back in the outer callout
  apply(kCFRunLoopBeforeWaiting);
  EXPECT_FALSE(busy);
  EXPECT_EQ(passes, 4);
}

}  // namespace
}  // namespace hangwatch::integrations::apple
