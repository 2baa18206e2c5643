// "CFI, else frame pointers": one captured thread's frames, from the hybrid CFI walk
// (CfiUnwinder, Mode::kHybrid) when it finds at least as much as the frame-pointer walk the
// capture already made, else from that frame-pointer walk. Used by the agent's watchdog
// (agent/core/stall_monitor.cc, the frame records walked in the signal handler or /proc reader) and
// by `hangwatch snapshot` (tools/snapshot/snapshot_unwind.cc, the records walked in the stack
// copy).
//
// Runs off the capture path, after the capture returned. It allocates nothing itself (libdwfl
// allocates inside CfiUnwinder::Unwind): the caller passes every buffer, so the watchdog keeps
// using the storage it sized at start.
#ifndef HANGWATCH_SYMBOLS_CFI_OR_FRAME_POINTERS_H_
#define HANGWATCH_SYMBOLS_CFI_OR_FRAME_POINTERS_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "symbols/cfi_unwinder.h"
#include "unwind/memory_view.h"

namespace hangwatch::symbols {

struct ChosenFrames {
  size_t num_frames = 0;
  bool truncated = false;  // max_frames reached by the chosen walk
  bool cfi = false;        // the CFI walk's frames were chosen
};

// On entry frames[0..fp_frames) hold the frame-pointer walk (frames[0] = the pc) and
// `fp_truncated` says whether it reached its limit. `cfi` (null: frame pointers only) unwinds
// from `start` over `memory` into `scratch`. Its frames replace the frame-pointer ones when it
// found at least one and either at least as many, or start.fp_known is false (the capture had
// no frame pointer to follow, so its walk is the pc alone). `methods` receives how each chosen
// frame was found (pc and fp for the frame-pointer walk). frames, scratch and methods hold
// max_frames entries each.
ChosenFrames UnwindCfiOrFramePointers(CfiUnwinder* cfi, const UnwindStart& start,
                                      std::span<const unwind::MemoryView> memory, uintptr_t* frames,
                                      size_t fp_frames, bool fp_truncated, uintptr_t* scratch,
                                      FrameMethod* methods, size_t max_frames);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_CFI_OR_FRAME_POINTERS_H_
