#include "python/capture_chain.h"

#include <cstring>

namespace hangwatch::python {
namespace {

constexpr size_t kMaxFrameBytes = 128;

template <typename T>
T Field(const unsigned char* bytes, uint32_t offset) {
  T v;
  std::memcpy(&v, bytes + offset, sizeof(T));
  return v;
}

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
    const uint64_t code = Field<uint64_t>(bytes, layout.frame_code);
    const uint64_t previous = Field<uint64_t>(bytes, layout.frame_previous);
    if (layout.frame_owner != kNoField &&
        Field<uint8_t>(bytes, layout.frame_owner) == layout.owner_cstack) {
      if (n > 0) out[n - 1].entry = true;  // 3.12's entry shim: the frame under it began a call
      frame = previous;
      continue;
    }
    if (code == 0) {
      *end = ChainEnd::kNotCode;
      return n;
    }
    if (n == capacity) {
      *end = ChainEnd::kFull;
      return n;
    }
    PythonFrame& f = out[n++];
    f.frame = frame;
    f.code = code;
    if (layout.frame_objects) {
      f.instr = Field<int32_t>(bytes, layout.frame_instr);
      f.entry = true;
    } else {
      const uint64_t instr_ptr = Field<uint64_t>(bytes, layout.frame_instr);
      const uint64_t first = code + layout.code_adaptive;
      f.instr = instr_ptr >= first ? static_cast<int64_t>((instr_ptr - first) / 2) : -1;
      f.entry =
          layout.frame_is_entry != kNoField && Field<uint8_t>(bytes, layout.frame_is_entry) != 0;
    }
    frame = previous;
  }
  return n;
}

}  // namespace hangwatch::python
