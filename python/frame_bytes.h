// FrameBytes: what one frame's first `layout.frame_size` bytes say, decoded the same way by the
// two chain readers (frame_chain.h out of process and in the snapshot, capture_chain.h in the
// capture hook's copy). Header-only, allocation-free, async-signal-safe.
#ifndef HANGWATCH_PYTHON_FRAME_BYTES_H_
#define HANGWATCH_PYTHON_FRAME_BYTES_H_

#include <cstdint>
#include <cstring>

#include "python/frame_chain.h"
#include "python/python_layout.h"

namespace hangwatch::python {

template <typename T>
T FrameField(const unsigned char* bytes, uint32_t offset) {
  T v;
  std::memcpy(&v, bytes + offset, sizeof(T));
  return v;
}

struct FrameBytes {
  uint64_t code = 0;
  uint64_t previous = 0;
  // An entry shim (3.12, 3.13: owned by the C stack): no Python function of its own; the frame
  // under it (its callee, already read) began a native eval-loop call.
  bool shim = false;
};

inline FrameBytes DecodeFrameBytes(const PythonLayout& layout, const unsigned char* bytes) {
  FrameBytes f;
  f.code = FrameField<uint64_t>(bytes, layout.frame_code);
  f.previous = FrameField<uint64_t>(bytes, layout.frame_previous);
  f.shim = layout.frame_owner != kNoField &&
           FrameField<uint8_t>(bytes, layout.frame_owner) == layout.owner_cstack;
  return f;
}

// The frame at `frame`, whose code object is `code`: its instruction and entry mark.
inline PythonFrame MakePythonFrame(const PythonLayout& layout, const unsigned char* bytes,
                                   uint64_t frame, uint64_t code) {
  PythonFrame f;
  f.frame = frame;
  f.code = code;
  if (layout.frame_objects) {  // 3.10: f_lasti, and every frame is its own eval-loop call
    f.instr = FrameField<int32_t>(bytes, layout.frame_instr);
    f.entry = true;
  } else {
    const uint64_t instr_ptr = FrameField<uint64_t>(bytes, layout.frame_instr);
    const uint64_t first = code + layout.code_adaptive;
    // prev_instr is one code unit before the first instruction until the frame starts.
    f.instr = instr_ptr >= first ? static_cast<int64_t>((instr_ptr - first) / 2) : -1;
    f.entry =
        layout.frame_is_entry != kNoField && FrameField<uint8_t>(bytes, layout.frame_is_entry) != 0;
  }
  return f;
}

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_FRAME_BYTES_H_
