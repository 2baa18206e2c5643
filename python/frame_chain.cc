#include "python/frame_chain.h"

#include <cstring>

#include "python/frame_bytes.h"

namespace hangwatch::python {
namespace {

// Bounds on walking lists that a corrupt process could make endless.
constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreadStates = 4096;
constexpr size_t kMaxFrameBytes = 128;

}  // namespace

const char* ChainEndName(ChainEnd end) {
  switch (end) {
    case ChainEnd::kComplete:
      return "complete";
    case ChainEnd::kFull:
      return "full";
    case ChainEnd::kUnreadable:
      return "unreadable";
    case ChainEnd::kNotCode:
      return "not a code object";
    case ChainEnd::kCycle:
      return "cycle";
    case ChainEnd::kNoEntry:
      return "the outermost frame read began no call";
  }
  return "?";
}

FrameChainReader::FrameChainReader(const MemoryReader& memory, const PythonLayout& layout,
                                   const InterpreterAddresses& addresses)
    : memory_(memory), layout_(layout), addresses_(addresses) {}

uint64_t FrameChainReader::FirstInterpreter() const {
  uint64_t interp = 0;
  if (!memory_.ReadWord(addresses_.runtime + layout_.runtime_interpreters_head, &interp)) return 0;
  return interp;
}

bool FrameChainReader::IsCode(uint64_t addr) const {
  uint64_t type = 0;
  return addr != 0 && memory_.ReadWord(addr + layout_.object_type, &type) &&
         type == addresses_.code_type;
}

uint64_t FrameChainReader::InnermostFrame(uint64_t tstate) const {
  uint64_t frame = 0;
  if (layout_.tstate_frame != kNoField) {
    if (!memory_.ReadWord(tstate + layout_.tstate_frame, &frame)) return 0;
    return frame;
  }
  uint64_t cframe = 0;
  if (!memory_.ReadWord(tstate + layout_.tstate_cframe, &cframe) || cframe == 0) return 0;
  if (!memory_.ReadWord(cframe + layout_.cframe_current_frame, &frame)) return 0;
  return frame;
}

std::string FrameChainReader::CheckLayout() const {
  char type_name[8] = {};
  uint64_t name_ptr = 0;
  if (!memory_.ReadWord(addresses_.code_type + layout_.type_name, &name_ptr) ||
      !memory_.Read(name_ptr, type_name, 5) || std::memcmp(type_name, "code", 5) != 0) {
    return "PyCode_Type's tp_name does not read \"code\"";
  }
  const uint64_t interp = FirstInterpreter();
  if (interp == 0) return "_PyRuntime.interpreters.head is empty or unreadable";
  uint64_t tstate = 0;
  if (!memory_.ReadWord(interp + layout_.interp_threads_head, &tstate)) {
    return "the interpreter's thread list is unreadable";
  }
  int seen = 0;
  for (; tstate != 0 && seen < kMaxInterpreters; ++seen) {
    uint64_t back = 0;
    if (!memory_.ReadWord(tstate + layout_.tstate_interp, &back) || back != interp) {
      return "a thread state's interp does not point back to its interpreter";
    }
    const uint64_t frame = InnermostFrame(tstate);
    uint8_t owner = 0;
    if (frame != 0 && layout_.frame_owner != kNoField &&
        !memory_.Read(frame + layout_.frame_owner, &owner, 1)) {
      return "a thread's innermost frame is unreadable";
    }
    // An entry shim says nothing of the layout: 3.12's holds the interpreter's trampoline (a
    // code object too), 3.13's holds None.
    const bool shim = layout_.frame_owner != kNoField && owner == layout_.owner_cstack;
    if (frame != 0 && !shim) {
      uint64_t code = 0;
      if (!memory_.ReadWord(frame + layout_.frame_code, &code)) {
        return "a thread's innermost frame is unreadable";
      }
      if (!IsCode(code)) return "a thread's innermost frame does not hold a code object";
    }
    if (!memory_.ReadWord(tstate + layout_.tstate_next, &tstate)) {
      return "a thread state's next is unreadable";
    }
  }
  if (seen == 0) return "the interpreter has no thread state";
  return "";
}

uint64_t FrameChainReader::FindThreadState(pid_t tid, uint64_t pthread_self) const {
  uint64_t interp = FirstInterpreter();
  for (int i = 0; interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t tstate = 0;
    if (!memory_.ReadWord(interp + layout_.interp_threads_head, &tstate)) return 0;
    for (int k = 0; tstate != 0 && k < kMaxThreadStates; ++k) {
      uint64_t id = 0;
      if (layout_.tstate_native_thread_id != kNoField) {
        if (memory_.ReadWord(tstate + layout_.tstate_native_thread_id, &id) &&
            id == static_cast<uint64_t>(tid)) {
          return tstate;
        }
      } else if (pthread_self != 0 && memory_.ReadWord(tstate + layout_.tstate_thread_id, &id) &&
                 id == pthread_self) {
        return tstate;
      }
      if (!memory_.ReadWord(tstate + layout_.tstate_next, &tstate)) break;
    }
    if (!memory_.ReadWord(interp + layout_.interp_next, &interp)) return 0;
  }
  return 0;
}

size_t FrameChainReader::ReadChain(uint64_t tstate, PythonFrame* out, size_t capacity,
                                   ChainEnd* end) const {
  *end = ChainEnd::kComplete;
  uint64_t frame = InnermostFrame(tstate);
  size_t n = 0;
  unsigned char bytes[kMaxFrameBytes];
  const size_t frame_bytes = layout_.frame_size <= kMaxFrameBytes ? layout_.frame_size : 0;
  if (frame_bytes == 0) {
    *end = ChainEnd::kUnreadable;
    return 0;
  }
  // Every step records a frame or skips an entry shim, and a shim is never followed by another
  // in a sound chain: twice the capacity bounds a chain that loops through shims (the cycle
  // check below sees recorded frames only).
  for (size_t steps = 0; frame != 0; ++steps) {
    if (steps > 2 * capacity + 2) {
      *end = ChainEnd::kCycle;
      return n;
    }
    if (!memory_.Read(frame, bytes, frame_bytes)) {
      *end = ChainEnd::kUnreadable;
      return n;
    }
    for (size_t i = 0; i < n; ++i) {
      if (out[i].frame == frame) {
        *end = ChainEnd::kCycle;
        return n;
      }
    }
    const FrameBytes fb = DecodeFrameBytes(layout_, bytes);
    if (fb.shim) {
      if (n > 0) out[n - 1].entry = true;  // see FrameBytes::shim
      frame = fb.previous;
      continue;
    }
    const uint64_t code = fb.code;
    if (!IsCode(code)) {
      *end = ChainEnd::kNotCode;
      return n;
    }
    if (n == capacity) {
      *end = ChainEnd::kFull;
      return n;
    }
    out[n++] = MakePythonFrame(layout_, bytes, frame, code);
    frame = fb.previous;
  }
  return n;
}

}  // namespace hangwatch::python
