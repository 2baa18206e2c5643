// Frame-pointer walk over a MemoryView. Async-signal-safe, allocation-free, bounded.
//
// The walk trusts nothing it reads: every frame pointer must be inside the view, aligned, and
// strictly above the previous one, so a corrupt or adversarial chain ends the walk instead of
// crashing it or looping.
#ifndef HANGWATCH_UNWIND_FRAME_WALKER_H_
#define HANGWATCH_UNWIND_FRAME_WALKER_H_

#include <cstddef>
#include <cstdint>

#include "unwind/memory_view.h"
#include "unwind/registers.h"

namespace hangwatch::unwind {

struct WalkResult {
  size_t num_frames = 0;   // entries written to `frames`
  bool truncated = false;  // stopped because max_frames was reached, not because the chain ended
};

// Writes the program counters of the stack into frames[0..max_frames): frames[0] is regs.pc
// (the interrupted instruction), the rest are return addresses, innermost first. When regs.lr is
// set (arm64) and differs from the first frame record's return address, it is taken as the first
// caller: the interrupted function is a leaf, or has not pushed its frame record yet.
WalkResult WalkFramePointers(const MemoryView& stack, const Registers& regs, uintptr_t* frames,
                             size_t max_frames);

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_FRAME_WALKER_H_
