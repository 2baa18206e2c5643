// FrameChainReader: a thread's chain of Python frames, read from the interpreter's own
// structures through a MemoryReader: _PyRuntime -> interpreters -> thread states (matched to a
// kernel tid) -> the innermost frame -> previous -> ... Each frame gives its code object's
// address and the instruction it is at; names and lines are resolved later (code_resolver.h).
//
// Reading the chain (FindThreadState, ReadChain) allocates nothing and is bounded: the frames
// go into the caller's buffer, a frame whose code is not a code object (garbage, a frame freed
// under the reader) or that was already seen (a cycle) ends the chain. So it can run while the
// target thread is stopped, and later on the agent's capture path with a guarded reader.
#ifndef HANGWATCH_PYTHON_FRAME_CHAIN_H_
#define HANGWATCH_PYTHON_FRAME_CHAIN_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "python/interpreter_locator.h"
#include "python/memory_reader.h"
#include "python/python_layout.h"

namespace hangwatch::python {

struct PythonFrame {
  uint64_t frame = 0;  // the frame's address (_PyInterpreterFrame or PyFrameObject)
  uint64_t code = 0;   // its code object
  int64_t instr = -1;  // code units from the first instruction; -1: not started
  // The outermost Python frame run by one native call of the eval loop
  // (_PyEval_EvalFrameDefault): 3.11's is_entry, the frame under 3.12's and 3.13's entry shim,
  // every frame in 3.10. The frames from the innermost down to the first `entry` one replace the
  // innermost native eval-loop frame, and so on.
  bool entry = false;
};

// Why a chain ended.
enum class ChainEnd : uint8_t {
  kComplete,    // the outermost frame was reached
  kFull,        // the caller's buffer was full
  kUnreadable,  // a pointer led to memory that cannot be read
  kNotCode,     // a frame's code is not a code object (garbage or a freed frame)
  kCycle,       // a frame came back
  // The chain ended (a null `previous`) at a frame that did not begin a native call of the eval
  // loop (no `entry` mark), where a thread's outermost Python frame always does: a frame read
  // while it was being pushed or popped, its outer frames not reached (the capture's reader).
  kNoEntry,
};
const char* ChainEndName(ChainEnd end);

class FrameChainReader {
 public:
  // `memory`, `layout` must outlive the reader.
  FrameChainReader(const MemoryReader& memory, const PythonLayout& layout,
                   const InterpreterAddresses& addresses);

  // Tests the layout against the live interpreter: an interpreter is found, each of its thread
  // states (up to 64) points back to it, PyCode_Type's name reads "code", and the innermost
  // frame of each thread state holds a code object. "" when all hold, else one line saying
  // which check failed: Python frames must then not be read.
  std::string CheckLayout() const;

  // The thread state of kernel thread `tid` (3.11+: native_thread_id), or of the thread whose
  // pthread_t is `pthread_self` (3.10, which does not keep the tid; 0: unknown). 0 when none.
  uint64_t FindThreadState(pid_t tid, uint64_t pthread_self) const;

  // The frames of thread state `tstate`, innermost first, into out[0..capacity). Returns how
  // many; *end says why it stopped.
  size_t ReadChain(uint64_t tstate, PythonFrame* out, size_t capacity, ChainEnd* end) const;

  // Whether `addr` is a code object (its type is PyCode_Type).
  bool IsCode(uint64_t addr) const;

 private:
  uint64_t FirstInterpreter() const;
  uint64_t InnermostFrame(uint64_t tstate) const;

  const MemoryReader& memory_;
  const PythonLayout& layout_;
  InterpreterAddresses addresses_;
};

}  // namespace hangwatch::python

#endif  // HANGWATCH_PYTHON_FRAME_CHAIN_H_
