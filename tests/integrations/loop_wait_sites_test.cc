// The rules by which the preload shim tells the main loop's own waits from waits inside a pass
// (integrations/preload/loop_wait_sites.h), on hand-made call sites and stack depths: the one
// for a private epoll loop run inside a pass (node's execSync) beside the one it must not
// change (a nested loop on the loop's own instance, or a poll loop's, stays idle).
#include "integrations/preload/loop_wait_sites.h"

#include <gtest/gtest.h>

namespace hangwatch::preload {

LoopWaitSites g_loop_wait_sites;  // the shim's own is in preload_shim.cc, not linked here

namespace {

const void* const kLoopSite = reinterpret_cast<const void*>(0x1000);
const void* const kHandlerSite = reinterpret_cast<const void*>(0x2000);
constexpr uintptr_t kLoopCfa = 0x7ff0'0000;
constexpr uintptr_t kDeeper = kLoopCfa - 0x800;

// A loop learned from a time-out of its wait at kLoopSite, on epoll instance `epfd`.
LoopWaitSites Learned(int epfd) {
  LoopWaitSites s{};
  NoteIdleWait(s, /*blocking=*/true, /*result=*/0, kLoopSite, kLoopCfa, epfd);
  return s;
}

TEST(LoopWaitSites, APrivateEpollLoopDeeperThanTheLoopIsWorkOfThePass) {
  const LoopWaitSites s = Learned(/*epfd=*/5);
  ASSERT_EQ(s.count, 1);
  EXPECT_FALSE(WaitIsInsidePass(s, kLoopSite, kLoopCfa, 5));  // the loop itself
  EXPECT_TRUE(WaitIsInsidePass(s, kLoopSite, kDeeper, 9));    // execSync's private loop
  EXPECT_FALSE(WaitIsInsidePass(s, kLoopSite, kDeeper, 5));   // a nested run of the same loop
  EXPECT_FALSE(WaitIsInsidePass(s, kLoopSite, kLoopCfa, 9));  // another loop beside it: idle
  EXPECT_TRUE(WaitIsInsidePass(s, kHandlerSite, kDeeper));    // a handler's poll, as before
}

TEST(LoopWaitSites, APollLoopsNestedRunsStayIdle) {
  const LoopWaitSites s = Learned(/*epfd=*/-1);  // poll: no instance (GTK's dialogs)
  EXPECT_FALSE(WaitIsInsidePass(s, kLoopSite, kDeeper, -1));
  EXPECT_FALSE(WaitIsInsidePass(s, kLoopSite, kDeeper, 7));
}

TEST(LoopWaitSites, TheInstanceIsTheShallowestLearnedWaits) {
  LoopWaitSites s{};
  // A nested loop's wait learned first, deeper; then the loop's own, shallower: its instance.
  NoteIdleWait(s, true, 0, kLoopSite, kDeeper, 9);
  NoteIdleWait(s, true, 0, kLoopSite, kLoopCfa, 5);
  EXPECT_EQ(s.loop_epfd_plus1, 6);
  EXPECT_TRUE(WaitIsInsidePass(s, kLoopSite, kDeeper, 9));
}

}  // namespace
}  // namespace hangwatch::preload
