// "CFI, else frame pointers": the choice between the two walks of one capture.
#include "symbols/cfi_or_frame_pointers.h"

#include <algorithm>

namespace hangwatch::symbols {

ChosenFrames UnwindCfiOrFramePointers(CfiUnwinder* cfi, const UnwindStart& start,
                                      std::span<const unwind::MemoryView> memory, uintptr_t* frames,
                                      size_t fp_frames, bool fp_truncated, uintptr_t* scratch,
                                      FrameMethod* methods, size_t max_frames) {
  fp_frames = std::min(fp_frames, max_frames);
  if (cfi != nullptr) {
    const UnwindResult r = cfi->Unwind(start, memory, scratch, methods, max_frames);
    if (r.num_frames > 0 && (r.num_frames >= fp_frames || !start.fp_known)) {
      std::copy(scratch, scratch + r.num_frames, frames);
      return {r.num_frames, r.truncated, /*cfi=*/true};
    }
    // CFI found less than the frame records did (e.g. a module unloaded since): keep those.
  }
  for (size_t i = 0; i < fp_frames; ++i) {
    methods[i] = i == 0 ? FrameMethod::kPc : FrameMethod::kFramePointer;
  }
  return {fp_frames, fp_truncated, /*cfi=*/false};
}

}  // namespace hangwatch::symbols
