#include "python/frame_placement.h"

namespace hangwatch::python {

bool InEvalLoop(uint64_t addr, bool is_pc, uint64_t eval_lo, uint64_t eval_hi) {
  if (eval_lo == 0 || addr == 0) return false;
  const uint64_t at = is_pc ? addr : addr - 1;
  return at >= eval_lo && at < eval_hi;
}

Placement PlacePythonFrames(const NativeMark* marks, size_t n_native, const PythonFrame* python,
                            size_t n_python, PlacedFrame* out, size_t capacity) {
  Placement p;
  auto put = [&](bool is_python, size_t index) {
    if (p.size < capacity) out[p.size++] = PlacedFrame{is_python, static_cast<uint32_t>(index)};
  };
  size_t next_py = 0;
  bool replaced = false;  // the previous native frame was replaced by Python frames
  for (size_t i = 0; i < n_native; ++i) {
    if (marks[i] == NativeMark::kSameAsPrevious && replaced) continue;
    replaced = false;
    if (marks[i] == NativeMark::kEvalLoop && next_py < n_python) {
      // One group: up to and including the next `entry` frame (or the chain's end).
      while (next_py < n_python) {
        const bool entry = python[next_py].entry;
        put(true, next_py++);
        if (entry) break;
      }
      replaced = true;
      continue;
    }
    put(false, i);
  }
  p.unplaced = n_python - next_py;
  for (; next_py < n_python; ++next_py) put(true, next_py);
  return p;
}

}  // namespace hangwatch::python
