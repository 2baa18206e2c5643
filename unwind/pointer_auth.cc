#include "unwind/pointer_auth.h"

namespace hangwatch::unwind {

WalkResult WalkFramePointersStripped(const MemoryView& stack, const Registers& regs,
                                     uintptr_t* frames, size_t max_frames, CodePointerStrip strip) {
  if (strip == nullptr) {
    strip = &StripPointerAuth;
  }
  Registers plain = regs;
  plain.pc = strip(regs.pc);
  plain.lr = strip(regs.lr);
  // WalkFramePointers reports lr as the first caller unless it equals the first record's
  // return address. That record holds the signed value, so the comparison is settled here, on
  // stripped values, and lr is withheld from the walker when it is the same address. The
  // record is read under the walker's own plausibility rule (aligned, inside the view).
  if (plain.lr != 0 && regs.fp % sizeof(uintptr_t) == 0 &&
      regs.fp <= UINTPTR_MAX - 2 * sizeof(uintptr_t)) {
    uintptr_t saved_fp = 0;
    uintptr_t saved_ret = 0;
    if (stack.ReadWord(regs.fp, &saved_fp) &&
        stack.ReadWord(regs.fp + sizeof(uintptr_t), &saved_ret) && strip(saved_ret) == plain.lr) {
      plain.lr = 0;
    }
  }
  const WalkResult result = WalkFramePointers(stack, plain, frames, max_frames);
  for (size_t i = 0; i < result.num_frames; ++i) {
    frames[i] = strip(frames[i]);
  }
  return result;
}

}  // namespace hangwatch::unwind
