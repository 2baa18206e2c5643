// The stack slice MachSampler copies from a suspended thread.
#include "unwind/mach/stack_range.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace hangwatch::unwind::mach {
namespace {

constexpr StackBounds kStack{0x16f000000, 0x16f800000};  // 8 MiB, like the main thread's

TEST(MachStackRange, CopiesFromTheRedZoneUpToMaxBytes) {
  const uintptr_t sp = 0x16f7f0000;
  const StackCopyRange r = StackRangeToCopy(sp, kStack, 4096);
  EXPECT_TRUE(r.within_bounds);
  EXPECT_EQ(r.lo, sp - kRedZoneBytes);
  EXPECT_EQ(r.hi, r.lo + 4096);
}

TEST(MachStackRange, StopsAtTheTopOfTheStack) {
  const uintptr_t sp = kStack.hi - 256;
  const StackCopyRange r = StackRangeToCopy(sp, kStack, 64 * 1024);
  EXPECT_EQ(r.lo, sp - kRedZoneBytes);
  EXPECT_EQ(r.hi, kStack.hi);
}

TEST(MachStackRange, RedZoneDoesNotReachBelowTheStack) {
  const uintptr_t sp = kStack.lo + 16;
  const StackCopyRange r = StackRangeToCopy(sp, kStack, 1024);
  EXPECT_EQ(r.lo, kStack.lo);
  EXPECT_EQ(r.hi, kStack.lo + 1024);
}

TEST(MachStackRange, SpOutsideTheRecordedStackIsAGuardedGuess) {
  for (uintptr_t sp : {kStack.hi, kStack.lo - 8, uintptr_t{0x7000'0000'0000}}) {
    const StackCopyRange r = StackRangeToCopy(sp, kStack, 2048);
    EXPECT_FALSE(r.within_bounds) << std::hex << sp;
    EXPECT_EQ(r.lo, sp - kRedZoneBytes);
    EXPECT_EQ(r.hi, r.lo + 2048);
  }
  // No recorded stack at all.
  const StackCopyRange r = StackRangeToCopy(0x1000, StackBounds{}, 512);
  EXPECT_FALSE(r.within_bounds);
  EXPECT_EQ(r.hi - r.lo, 512u);
}

TEST(MachStackRange, NeverWrapsAround) {
  StackCopyRange r = StackRangeToCopy(UINTPTR_MAX - 8, StackBounds{}, 4096);
  EXPECT_EQ(r.hi, UINTPTR_MAX);
  EXPECT_LE(r.lo, r.hi);
  r = StackRangeToCopy(16, StackBounds{}, 64);  // sp below the red zone size
  EXPECT_EQ(r.lo, 0u);
  EXPECT_EQ(r.hi, 64u);
  r = StackRangeToCopy(kStack.lo + 4096, kStack, 0);
  EXPECT_EQ(r.hi, r.lo);
}

static_assert(StackRangeToCopy(0x2000, StackBounds{0x1000, 0x3000}, 0x10000).hi == 0x3000,
              "usable at compile time");

}  // namespace
}  // namespace hangwatch::unwind::mach
