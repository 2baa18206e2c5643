// Registers and stack bounds of a captured thread: the plain data every other piece of unwind/
// passes around. No dependencies beyond <cstdint>; usable in signal handlers.
#ifndef HANGWATCH_UNWIND_REGISTERS_H_
#define HANGWATCH_UNWIND_REGISTERS_H_

#include <cstddef>
#include <cstdint>

namespace hangwatch::unwind {

// The registers a frame walk starts from. Copied out of the ucontext (Linux) or the thread
// state (Mach) while the thread is interrupted.
struct Registers {
  uintptr_t pc = 0;
  uintptr_t sp = 0;
  uintptr_t fp = 0;  // rbp on x86_64, x29 on arm64
  uintptr_t lr = 0;  // x30 on arm64; 0 on x86_64, which has no link register
};

// [lo, hi) of a thread's stack, recorded when the thread registers, so that every pointer
// found on the stack can be checked before it is followed.
struct StackBounds {
  uintptr_t lo = 0;
  uintptr_t hi = 0;

  // True when [addr, addr + len) lies inside the bounds (and does not wrap around).
  constexpr bool Contains(uintptr_t addr, size_t len) const {
    return addr >= lo && addr <= hi && len <= hi - addr;
  }
};

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_REGISTERS_H_
