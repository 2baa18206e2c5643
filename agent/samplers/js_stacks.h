// JsStacks: the JavaScript functions of a node process (any program whose V8 exports its
// postmortem metadata) in every sample of a hang, in place of the native frames that ran them:
// the interpreter's trampoline for an interpreted function, the JIT code of a compiled one.
// Linux; made by MakePlatformSampler when no CPython is found, the process exports
// `v8dbg_off_fp_function` and HANGWATCH_JS is not "0".
//
// Everything happens on the watchdog, in Merge, right after the capture (js/frame_finder.h):
//  - the JS frames' slots (frame pointer, function, bytecode offset) come from the capture's
//    stack copy, exact for the sample;
//  - the objects they name are read after the thread resumed (unwind/self_memory.h: a read
//    that cannot fault). What this relies on: a running function's SharedFunctionInfo lives in
//    V8's old space, which only a full mark-compact moves; a JSFunction may be young and move
//    at a scavenge between the capture and the read, and then its old copy is a forwarding
//    word, not a map whose type is a function: the frame stays native, never misnamed (a new
//    object at that address would need a second scavenge within the same microseconds).
//  - each frame becomes a runtime frame word (hang/model/runtime_frame_word.h) keyed by its
//    SharedFunctionInfo, with the bytecode offset for an interpreted frame whose bytecode's
//    source positions V8 has collected (else the function's own word, its first line, and
//    line_is_definition); named at once (js/function_resolver.h) into a cache of at most
//    kMaxNames words (names cut at 256 bytes, files at 512), re-named when the SFI's name or
//    script changed (an address reused). A function without a script (V8's own closures, the
//    JSFunctions of built-ins) stays a native frame, named by its builtin's symbol.
// No V8 API is called, no flag set, no profiler started: V8's own objects are only read.
#ifndef HANGWATCH_AGENT_SAMPLERS_JS_STACKS_H_
#define HANGWATCH_AGENT_SAMPLERS_JS_STACKS_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/samplers/runtime_frames.h"
#include "hang/model/runtime_names.h"
#include "js/frame_finder.h"
#include "js/function_resolver.h"
#include "js/heap_reader.h"
#include "js/memory_reader.h"
#include "js/v8_metadata.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {

class JsStacks final : public RuntimeFrames, public RuntimeNames {
 public:
  static constexpr size_t kMaxNames = 4096;

  // nullptr when this process has no V8 with postmortem metadata, when HANGWATCH_JS=0, or when
  // the metadata cannot be read (then one line in *notes says why). `max_frames`: per sample.
  static std::unique_ptr<JsStacks> Create(size_t max_frames, std::vector<std::string>* notes);

  void Watch(const unwind::ThreadInfo&) override {}
  void set_note(std::function<void(const std::string&)> note) override { note_ = std::move(note); }
  size_t Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) override;
  const RuntimeNames* names() const override { return this; }
  bool Find(uintptr_t word, RuntimeFrameName* out) const override;

  // Names cached (for the cost measurement).
  size_t cached_names() const;
  // Bytes the name caches hold (strings and nodes, approximately; call on the watchdog).
  size_t cached_bytes() const;

 private:
  JsStacks(const js::V8Metadata& metadata, size_t max_frames);
  // The word for frame `f`, named in the cache (a new name resolved now).
  uintptr_t Name(const js::JsFrame& f);
  static bool MayBeJsCode(const void* self, uintptr_t pc);

  js::V8Metadata metadata_;
  js::SelfMemoryReader self_;
  js::HeapReader heap_;
  js::FunctionResolver resolver_;
  js::FrameFinder finder_;
  std::shared_ptr<const symbols::ModuleMap> modules_;  // at Create: JIT code lies outside them
  size_t max_frames_;
  std::function<void(const std::string&)> note_;
  std::unique_ptr<js::JsFrame[]> frames_;
  struct Function {  // per SharedFunctionInfo
    uint64_t identity = 0;
    js::FunctionInfo info;
  };
  std::unordered_map<uint64_t, Function> functions_;  // watchdog only
  mutable std::mutex mu_;  // names_: Materialize may read from another thread
  struct Named {
    RuntimeFrameName name;
    uint64_t identity = 0;
  };
  std::unordered_map<uintptr_t, Named> names_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_JS_STACKS_H_
