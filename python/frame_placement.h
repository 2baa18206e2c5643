// Where a thread's Python frames go in its native stack, in place of the interpreter's
// eval-loop frames (`_PyEval_EvalFrameDefault`): shared by `hangwatch snapshot`
// (tools/snapshot/snapshot_python.h) and the agent (agent/samplers/python_stacks.h).
//
// One native call of the eval loop runs one or more Python frames (3.11+: a Python-to-Python
// call stays in the same C frame; a generator, a C function calling back into Python, a new
// thread start another). The chain's `entry` marks (frame_chain.h) split it into one group per
// native call, innermost first; the n-th eval-loop frame of the native stack, from the
// innermost, is replaced by the n-th group. Groups left over (the native unwind stopped short,
// or the eval loop's address is unknown) go after the native frames.
//
// Allocation-free: the caller gives the output's room.
#ifndef HANGWATCH_PYTHON_FRAME_PLACEMENT_H_
#define HANGWATCH_PYTHON_FRAME_PLACEMENT_H_

#include <cstddef>
#include <cstdint>

#include "python/frame_chain.h"

namespace hangwatch::python {

// What one native frame is to the placement.
enum class NativeMark : uint8_t {
  kOther,           // kept
  kEvalLoop,        // an eval-loop call: replaced by the next group of Python frames, if any
  kSameAsPrevious,  // another entry of the previous frame's address (an inlined function of a
                    // symbolized frame): dropped with it when it was replaced, else kept
};

// Whether `addr` is in the eval loop [eval_lo, eval_hi). A return address (is_pc false) is
// the instruction after the call: the call itself is at addr - 1. False when eval_lo is 0.
bool InEvalLoop(uint64_t addr, bool is_pc, uint64_t eval_lo, uint64_t eval_hi);

struct PlacedFrame {
  bool python = false;
  uint32_t index = 0;  // into the native frames or the Python frames
};

struct Placement {
  size_t size = 0;      // entries written
  size_t unplaced = 0;  // Python frames without an eval-loop frame, listed after the natives
};

// Merges native frames (their marks, innermost first) with `python[0..n_python)` into
// out[0..capacity); capacity n_native + n_python always suffices, less cuts the outermost.
Placement PlacePythonFrames(const NativeMark* marks, size_t n_native, const PythonFrame* python,
                            size_t n_python, PlacedFrame* out, size_t capacity);

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_FRAME_PLACEMENT_H_
