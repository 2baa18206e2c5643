// Which part of a suspended thread's stack MachSampler copies: from the red zone below sp up
// towards the top of the stack, at most max_bytes, clipped to the thread's recorded stack when sp
// lies inside it. Pure arithmetic, portable, overflow-safe; unit-tested on Linux.
#ifndef HANGWATCH_UNWIND_MACH_STACK_RANGE_H_
#define HANGWATCH_UNWIND_MACH_STACK_RANGE_H_

#include <cstddef>
#include <cstdint>

#include "unwind/registers.h"

namespace hangwatch::unwind::mach {

// arm64 and x86_64 (Darwin ABIs alike) let a leaf function use 128 bytes below sp without
// moving it: they may hold the leaf's saved registers, so they are copied too.
inline constexpr uintptr_t kRedZoneBytes = 128;

struct StackCopyRange {
  uintptr_t lo = 0;            // first byte to copy
  uintptr_t hi = 0;            // one past the last; hi == lo: nothing to copy
  bool within_bounds = false;  // false: sp is outside the recorded stack, reads are guesses
};

constexpr StackCopyRange StackRangeToCopy(uintptr_t sp, const StackBounds& bounds,
                                          size_t max_bytes) {
  StackCopyRange range;
  range.lo = sp >= kRedZoneBytes ? sp - kRedZoneBytes : 0;
  if (bounds.hi > bounds.lo && sp >= bounds.lo && sp < bounds.hi) {
    range.within_bounds = true;
    if (range.lo < bounds.lo) range.lo = bounds.lo;
    range.hi = bounds.hi - range.lo > max_bytes ? range.lo + max_bytes : bounds.hi;
  } else {
    // sp elsewhere (a signal stack, a coroutine, garbage): the caller's reads are guarded.
    range.hi = UINTPTR_MAX - range.lo > max_bytes ? range.lo + max_bytes : UINTPTR_MAX;
  }
  return range;
}

}  // namespace hangwatch::unwind::mach

#endif  // HANGWATCH_UNWIND_MACH_STACK_RANGE_H_
