// HangData's choice of a hang's cause among its samples', and the open-hang file's cause region
// (two checksummed copies): a torn copy leaves the other, a foreign size leaves none.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "hang/model/hang_data.h"
#include "hang/open_hang/open_hang_cause.h"
#include "hang/open_hang/open_hang_file.h"

namespace hangwatch::agent {
namespace {

WaitCause Lock(uint64_t addr, int32_t owner, int64_t owner_call) {
  WaitCause c;
  c.kind = CauseKind::kLock;
  c.call.nr = 202;
  c.lock.addr = addr;
  if (owner != 0) {
    c.num_threads = 1;
    c.threads[0].tid = owner;
    c.threads[0].call.nr = owner_call;
  }
  return c;
}

void Sample(HangData* h, const WaitCause& c) {
  const uintptr_t frames[] = {0x1000};
  h->AddSample(10, frames, 1, frames[0], 0, 'S', true);
  h->NoteCause(c);
}

TEST(WaitCauseTest, TheHangsCauseIsTheWaitSeenInMostSamples) {
  HangData h(HangLimits{});
  for (int i = 0; i < 5; ++i) Sample(&h, Lock(0x100, 0, -1));  // a semaphore
  Sample(&h, Lock(0x200, 0, -1));  // at the end, another wait (an interpreter's own lock)
  EXPECT_EQ(h.cause.lock.addr, 0x100u);
  EXPECT_EQ(h.timeline()[5].cause, CauseKind::kLock);
  for (int i = 0; i < 5; ++i) Sample(&h, Lock(0x200, 0, -1));
  EXPECT_EQ(h.cause.lock.addr, 0x200u) << "6 samples against 5";
}

TEST(WaitCauseTest, AnOwnerLettingGoKeepsTheSampleThatSawItsCallAndADeadlockStays) {
  HangData h(HangLimits{});
  Sample(&h, Lock(0x100, 42, 74));  // the owner in fsync
  Sample(&h, Lock(0x100, 42, -1));  // the owner running, letting go
  EXPECT_EQ(h.cause.threads[0].call.nr, 74);
  EXPECT_EQ(h.timeline()[1].cause_tid, 42);
  WaitCause d = Lock(0x300, 43, 202);
  d.kind = CauseKind::kDeadlock;
  Sample(&h, d);
  for (int i = 0; i < 4; ++i) Sample(&h, Lock(0x100, 42, 74));
  EXPECT_EQ(h.cause.kind, CauseKind::kDeadlock);
  HangData copy(HangLimits{});
  copy.CopyFrom(h);
  EXPECT_EQ(copy.cause.kind, CauseKind::kDeadlock);
  h.Clear();
  EXPECT_EQ(h.cause.kind, CauseKind::kNone);
}

// main -> A held by 42 (in futex, waiting for B) -> B held by 43 (in nanosleep). At the end
// 43 lets go, running: the sample that saw it asleep stays (ThreadSanitizer's slower unlock
// made ChainOfTwoLocksNamesBothOwners see the last link running).
TEST(WaitCauseTest, TheLastOwnerOfAChainLettingGoKeepsTheSampleThatSawItsCall) {
  HangData h(HangLimits{});
  WaitCause asleep = Lock(0x100, 42, 202);
  asleep.num_threads = 2;
  asleep.threads[1].tid = 43;
  asleep.threads[1].call.nr = 35;
  WaitCause letting_go = asleep;
  letting_go.threads[1].call.nr = -1;
  Sample(&h, asleep);
  Sample(&h, letting_go);
  ASSERT_EQ(h.cause.num_threads, 2);
  EXPECT_EQ(h.cause.threads[1].call.nr, 35);
}

// The last sample of a wait for a child is read after the waiter reaped it: its /proc entry is
// gone (state '?', no name). The sample that read the child stays (WaitCauseE2eTest.
// SleepAndChildAreNamed read '?' in CI).
TEST(WaitCauseTest, AChildReapedBeforeItWasReadKeepsTheSampleThatReadIt) {
  HangData h(HangLimits{});
  WaitCause asleep;
  asleep.kind = CauseKind::kChild;
  asleep.call.nr = 61;
  asleep.child.pid = 4321;
  asleep.child.state = 'S';
  std::strcpy(asleep.child.name, "worker");
  WaitCause reaped = asleep;
  reaped.child.state = '?';
  reaped.child.name[0] = '\0';
  Sample(&h, asleep);
  Sample(&h, reaped);
  EXPECT_EQ(h.cause.child.state, 'S');
  EXPECT_STREQ(h.cause.child.name, "worker");
  WaitCause other = reaped;
  other.child.pid = 4322;  // another child, never read: the most seen wait still wins
  Sample(&h, other);
  Sample(&h, other);
  Sample(&h, other);
  EXPECT_EQ(h.cause.child.pid, 4322);
}

TEST(OpenHangCauseTest, ATornCopyLeavesTheOtherAndGarbageIsMadeSafe) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/hangwatch_cause_region_" + std::to_string(getpid());
  std::string region(OpenHangCauseBytes(), '\0');
  auto* p = reinterpret_cast<unsigned char*>(region.data());
  WaitCause first = Lock(0x100, 42, 74);
  WriteOpenHangCause(p, 1, first);
  WaitCause second = Lock(0x200, 43, 74);
  std::memset(second.threads[0].name, 'x', sizeof(second.threads[0].name));  // unterminated
  second.num_threads = 200;
  second.threads[0].num_frames = 100000;
  WriteOpenHangCause(p, 2, second);
  auto write_file = [&] {
    const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, region.data(), region.size()), static_cast<ssize_t>(region.size()));
    close(fd);
  };
  write_file();
  WaitCause back;
  int fd = open(path.c_str(), O_RDONLY);
  ASSERT_TRUE(ReadOpenHangCause(fd, 0, &back));
  close(fd);
  EXPECT_EQ(back.lock.addr, 0x200u) << "the newer copy";
  EXPECT_EQ(back.num_threads, kCauseMaxThreads);
  EXPECT_EQ(back.threads[0].num_frames, kCauseMaxFrames);
  EXPECT_EQ(back.threads[0].name[15], '\0');
  // Tear the newer copy (generation 2 is copy 0): the older one is read.
  region[40] ^= 0x5a;
  write_file();
  fd = open(path.c_str(), O_RDONLY);
  ASSERT_TRUE(ReadOpenHangCause(fd, 0, &back));
  close(fd);
  EXPECT_EQ(back.lock.addr, 0x100u);
  EXPECT_EQ(back.threads[0].tid, 42);
  // Both torn: none.
  region[OpenHangCauseBytes() / 2 + 40] ^= 0x5a;
  write_file();
  fd = open(path.c_str(), O_RDONLY);
  EXPECT_FALSE(ReadOpenHangCause(fd, 0, &back));
  close(fd);
  EXPECT_EQ(back.kind, CauseKind::kNone);
  unlink(path.c_str());
}

}  // namespace
}  // namespace hangwatch::agent
