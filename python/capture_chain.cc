#include "python/capture_chain.h"

#include "python/frame_bytes.h"

#include <cstring>

namespace hangwatch::python {
namespace {

constexpr size_t kMaxFrameBytes = 128;

}  // namespace

size_t ReadCaptureChain(const MemoryReader& memory, const PythonLayout& layout, uint64_t innermost,
                        PythonFrame* out, size_t capacity, ChainEnd* end) {
  *end = ChainEnd::kComplete;
  if (layout.frame_size == 0 || layout.frame_size > kMaxFrameBytes) {
    *end = ChainEnd::kUnreadable;
    return 0;
  }
  unsigned char bytes[kMaxFrameBytes];
  size_t n = 0;
  // Every step either records a frame or skips a 3.12 entry shim (never two in a row): twice
  // the capacity bounds a chain that loops through shims.
  size_t steps = 0;
  for (uint64_t frame = innermost; frame != 0; ++steps) {
    if (steps > 2 * capacity + 2) {
      *end = ChainEnd::kCycle;
      return n;
    }
    if (!memory.Read(frame, bytes, layout.frame_size)) {
      *end = ChainEnd::kUnreadable;
      return n;
    }
    const FrameBytes fb = DecodeFrameBytes(layout, bytes);
    if (fb.shim) {
      if (n > 0) out[n - 1].entry = true;  // 3.12's entry shim: the frame under it began a call
      frame = fb.previous;
      continue;
    }
    const uint64_t code = fb.code;
    if (code == 0) {
      *end = ChainEnd::kNotCode;
      return n;
    }
    if (n == capacity) {
      *end = ChainEnd::kFull;
      return n;
    }
    out[n++] = MakePythonFrame(layout, bytes, frame, code);
    frame = fb.previous;
  }
  // A thread's outermost Python frame began a native call of the eval loop (a layout that marks
  // those): a chain that ends elsewhere lost its outer frames.
  const bool marks_entries =
      layout.frame_objects || layout.frame_is_entry != kNoField || layout.frame_owner != kNoField;
  if (n > 0 && marks_entries && !out[n - 1].entry) *end = ChainEnd::kNoEntry;
  return n;
}

}  // namespace hangwatch::python
