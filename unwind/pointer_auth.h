// Pointer authentication (arm64e, and arm64 Linux built with -mbranch-protection=pac-ret):
// return addresses saved on the stack, and the lr and pc in a thread state, may carry a
// signature in their unused high bits. A frame walk compares and reports plain addresses, so
// every code pointer it reads is stripped first.
//
// Everything here is async-signal-safe, allocation-free and never traps: stripping never
// authenticates (a failed authentication may fault on cores with FEAT_FPAC).
#ifndef HANGWATCH_UNWIND_POINTER_AUTH_H_
#define HANGWATCH_UNWIND_POINTER_AUTH_H_

#include <cstddef>
#include <cstdint>

#include "unwind/frame_walker.h"
#include "unwind/memory_view.h"
#include "unwind/registers.h"

#if defined(__APPLE__)
#include <mach/vm_param.h>
#endif
#if defined(__has_feature)
#if __has_feature(ptrauth_calls)
#include <ptrauth.h>
#define HANGWATCH_HAVE_PTRAUTH 1
#endif
#endif

namespace hangwatch::unwind {

// Clears every bit at or above `address_bits`: the signature and any top-byte tag. A user-space
// code address never has those bits set, so for it this is the identity.
constexpr uintptr_t StripPointerAuthBits(uintptr_t value, unsigned address_bits) {
  if (address_bits >= sizeof(uintptr_t) * 8) {
    return value;
  }
  return value & ((uintptr_t{1} << address_bits) - 1);
}

// Number of significant bits in a user-space address of the target this file is compiled for;
// the signature lives above them. 0 means "this target has no pointer authentication".
constexpr unsigned UserAddressBits() {
#if defined(__aarch64__) && defined(__APPLE__)
  // Derived from the platform's own limit: 47 bits on macOS, 36 on iOS (where a fixed 47-bit
  // mask would leave part of the signature in place).
  unsigned bits = 0;
  for (uint64_t max = MACH_VM_MAX_ADDRESS - 1; max != 0; max >>= 1) ++bits;
  return bits;
#elif defined(__aarch64__)
  return 48;  // Linux: 48-bit user VA (52-bit only for mappings that ask for it explicitly)
#else
  return 0;  // x86_64: no pointer authentication
#endif
}

// Strips the pointer-authentication signature from a code pointer of this process.
inline uintptr_t StripPointerAuth(uintptr_t value) {
#if defined(HANGWATCH_HAVE_PTRAUTH)
  // arm64e: the compiler emits xpaci, which knows the exact signature layout.
  return reinterpret_cast<uintptr_t>(
      ptrauth_strip(reinterpret_cast<void*>(value), ptrauth_key_return_address));
#else
  constexpr unsigned kBits = UserAddressBits();
  return kBits == 0 ? value : StripPointerAuthBits(value, kBits);
#endif
}

// WalkFramePointers for stacks whose code pointers may be signed: pc, lr and every return
// address are stripped with `strip` (StripPointerAuth by default), and lr is compared with the
// first frame record's return address after stripping both, so that a signed copy of the same
// address is not reported twice. Async-signal-safe, bounded like WalkFramePointers.
using CodePointerStrip = uintptr_t (*)(uintptr_t);
WalkResult WalkFramePointersStripped(const MemoryView& stack, const Registers& regs,
                                     uintptr_t* frames, size_t max_frames,
                                     CodePointerStrip strip = &StripPointerAuth);

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_POINTER_AUTH_H_
