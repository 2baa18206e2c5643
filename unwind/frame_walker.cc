#include "unwind/frame_walker.h"

#include <cstring>

namespace hangwatch::unwind {
namespace {

// Frame records are two pointer-sized words: [fp] = caller's fp, [fp + 8] = return address, on
// both x86_64 (push rbp; mov rbp, rsp) and arm64 (stp x29, x30). A record must be at least
// pointer-aligned; anything less is garbage, not a frame.
constexpr uintptr_t kWordSize = sizeof(uintptr_t);
constexpr uintptr_t kRecordAlignment = kWordSize;

// Reads one word of the view. Inside a signal handler the view is the live stack, whose
// sanitizer shadow (ASan redzones around locals) must not be consulted: the bytes are read as
// plain memory, after the bounds check, never through an intercepted memcpy.
__attribute__((no_sanitize("address", "thread", "hwaddress"))) bool LoadWord(const MemoryView& view,
                                                                             uintptr_t addr,
                                                                             uintptr_t* out) {
  if (!view.Contains(addr, kWordSize)) {
    return false;
  }
  uintptr_t value = 0;
  __builtin_memcpy(&value, view.data + (addr - view.base), kWordSize);
  *out = value;
  return true;
}

// Reads the frame record at `fp` if it is a plausible one: aligned, entirely inside the view.
bool ReadRecord(const MemoryView& view, uintptr_t fp, uintptr_t* next_fp, uintptr_t* ret) {
  if (fp % kRecordAlignment != 0 || fp > UINTPTR_MAX - (2 * kWordSize - 1)) {
    return false;
  }
  return LoadWord(view, fp, next_fp) && LoadWord(view, fp + kWordSize, ret);
}

}  // namespace

WalkResult WalkFramePointers(const MemoryView& stack, const Registers& regs, uintptr_t* frames,
                             size_t max_frames) {
  WalkResult result;
  if (frames == nullptr || max_frames == 0) {
    result.truncated = true;
    return result;
  }
  frames[result.num_frames++] = regs.pc;

  uintptr_t fp = regs.fp;
  uintptr_t next_fp = 0;
  uintptr_t ret = 0;
  bool have_record = ReadRecord(stack, fp, &next_fp, &ret);

  // arm64: the link register holds the caller of a leaf (or of a function interrupted before it
  // stored its frame record), which the fp chain alone would skip.
  if (regs.lr != 0 && (!have_record || regs.lr != ret)) {
    if (result.num_frames == max_frames) {
      result.truncated = true;
      return result;
    }
    frames[result.num_frames++] = regs.lr;
  }

  while (have_record && ret != 0) {
    if (result.num_frames == max_frames) {
      result.truncated = true;
      break;
    }
    frames[result.num_frames++] = ret;
    // Strictly increasing: a record at or below the current one is a loop or garbage. The
    // number of iterations is bounded both by max_frames and by the view size / 16.
    if (next_fp <= fp) {
      break;
    }
    fp = next_fp;
    have_record = ReadRecord(stack, fp, &next_fp, &ret);
  }
  return result;
}

}  // namespace hangwatch::unwind
