// `hangwatch snapshot` of a node process (any program whose V8 exports its postmortem
// metadata): each thread's JavaScript frames (js/) in place of the native frames that ran them,
// as the agent does in hangs (agent/samplers/js_stacks.h). The frame slots come from each
// thread's stack copy taken in the stop window; the objects they name are read after it and
// checked by their maps (js/README.md), so a function the GC moved meanwhile stays native.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JS_H_
#define HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "js/function_resolver.h"
#include "js/heap_reader.h"
#include "js/memory_reader.h"
#include "js/v8_metadata.h"
#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_output.h"

namespace hangwatch::tools {

class SnapshotJs {
 public:
  // Finds V8's metadata in `pid`'s modules. A process without it: inactive, nothing said; one
  // whose metadata cannot be read: inactive, one line in *notes.
  SnapshotJs(pid_t pid, const symbols::ProcessModules& modules, std::vector<std::string>* notes);

  bool active() const { return metadata_ != nullptr; }
  // "V8 of /usr/bin/node": the module whose metadata is read.
  std::string Describe() const;

  // After symbolization: each thread's JS frames in its native stack. The frames' strings live
  // in this object: it must outlive the output.
  void Merge(std::vector<OutThread>* threads);

 private:
  struct Named {
    std::string symbol;
    std::string file;
    int line = 0;
    bool line_is_definition = false;
  };
  // The name of a frame (null: not a function with a script), cached by SFI and offset.
  const Named* Name(uint64_t sfi, uint64_t bytecode_array, int64_t offset);
  static bool MayBeJsCode(const void* self, uintptr_t pc);

  js::ProcessMemoryReader memory_;
  std::shared_ptr<const symbols::ModuleMap> modules_;
  std::unique_ptr<js::V8Metadata> metadata_;
  std::unique_ptr<js::HeapReader> heap_;
  std::unique_ptr<js::FunctionResolver> resolver_;
  std::unordered_map<uint64_t, js::FunctionInfo> functions_;  // by SFI; no script: no name
  std::unordered_map<std::string, Named> names_;              // by "sfi:offset"; nodes stable
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_JS_H_
