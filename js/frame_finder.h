// FrameFinder: the JavaScript frames among the native frames of one capture, each with its
// SharedFunctionInfo (the function's identity across closures) and, for an interpreted frame,
// the bytecode offset it is at.
//
// V8's frames keep frame pointers: a JS frame's fp points at the caller's saved fp, with the
// return address into its caller above it and, below, the context and the JSFunction being run
// (V8Metadata::fp_context, fp_function; interpreted frames also the BytecodeArray and the
// bytecode offset). The native unwind gives each frame's pc, not its fp, so a frame's fp is
// found in the capture's stack copy: the slot holding the next frame's return address, the
// slots in ascending order, fp being the slot below it. The frame slots come from the copy,
// exact for the sample; the objects they name are read after it (the JSFunction, its map, its
// SharedFunctionInfo and that one's map: three ReadV batches for all frames), and a frame
// counts only when each is what its map says: a JSFunction (or one of V8's function subtypes)
// whose `shared` is a SharedFunctionInfo. A slot that is no such object (a native frame, a
// function the GC moved since) gives no JS frame.
//
// Allocation-free after construction; not async-signal-safe (the agent runs it on the watchdog).
#ifndef HANGWATCH_JS_FRAME_FINDER_H_
#define HANGWATCH_JS_FRAME_FINDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "js/memory_reader.h"
#include "js/v8_metadata.h"
#include "unwind/memory_view.h"

namespace hangwatch::js {

struct JsFrame {
  size_t index = 0;                // of the native frame it is
  uint64_t sfi = 0;                // tagged SharedFunctionInfo
  uint64_t sfi_name_or_scope = 0;  // its fields at the time, the identity of the function
  uint64_t sfi_script = 0;
  // Interpreted frames that were calling (not the innermost, whose slot may be stale): the
  // frame's BytecodeArray and bytecode offset; else 0 and -1.
  uint64_t bytecode_array = 0;
  int64_t bytecode_offset = -1;
};

class FrameFinder {
 public:
  // Instance types a JSFunction's map may have: V8's function subtypes follow JS_FUNCTION_TYPE
  // (class constructors, the built-in constructors).
  static constexpr uint16_t kFunctionTypeSpan = 24;

  FrameFinder(const V8Metadata& metadata, const MemoryReader& memory, size_t max_frames);

  // Whether a pc may be JS code (builtins, JIT code); null: every pc may be.
  using CodeFilter = bool (*)(const void* context, uintptr_t pc);
  void set_code_filter(CodeFilter filter, const void* context) {
    filter_ = filter;
    filter_context_ = context;
  }

  // pcs[0..n): the capture's native frames, innermost first; `stack`: its stack copy. Writes
  // the JS frames found into out[] (at most max_frames) in order, and returns how many.
  size_t Find(const uintptr_t* pcs, size_t n, const unwind::MemoryView& stack, JsFrame* out);

 private:
  struct Candidate {
    size_t index;
    uint64_t fp;
    uint64_t function;
    uint64_t bytecode_array;
    uint64_t bytecode_offset;
    uint64_t header[4];  // the JSFunction's first words: map, ..., shared
    uint16_t function_type;
    uint64_t sfi_header[5];  // the SFI's first words
    uint16_t sfi_type;
  };
  size_t Candidates(const uintptr_t* pcs, size_t n, const unwind::MemoryView& stack);

  const V8Metadata& m_;
  const MemoryReader& memory_;
  size_t max_frames_;
  CodeFilter filter_ = nullptr;
  const void* filter_context_ = nullptr;
  std::unique_ptr<Candidate[]> candidates_;
  std::unique_ptr<ReadRange[]> ranges_;
};

}  // namespace hangwatch::js

#endif  // HANGWATCH_JS_FRAME_FINDER_H_
