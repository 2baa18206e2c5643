// Materialize: turns a HangData (addresses and counts in fixed storage) into a public
// HangRecord: frames resolved to module / build-id / offset, symbolized, stacks sorted by
// count, the dominant stack, its culprit, signature and fingerprint (report/stack_identity.h). Runs
// when a hang is reported or read, never on the capture path; it allocates.
#ifndef HANGWATCH_HANG_MODEL_MATERIALIZE_H_
#define HANGWATCH_HANG_MODEL_MATERIALIZE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "hang/model/hang_data.h"
#include "hang/model/jit_frame_lines.h"
#include "hang/model/runtime_names.h"
#include "hangwatch/hang_record.h"
#include "symbols/module_map.h"

namespace hangwatch::agent {

struct MaterializeOptions {
  // The modules the hang's addresses belong to. For a hang of this process: the current map.
  std::shared_ptr<const symbols::ModuleMap> modules;
  // True: the addresses are this process's, symbolize them directly. False (a hang read back
  // from another run): symbolize a frame only when a module with the same build-id is loaded
  // here, at its address in this process.
  bool addresses_are_local = true;
  bool symbolize = true;
  std::string process;       // main executable path
  std::string process_name;  // "": this process's (addresses_are_local), else process's file name
  std::string host;
  std::map<std::string, std::string> labels;
  // Names of the hang's Python frames (runtime_names.h: the live cache, or the names read back
  // from an open-hang file); nullptr: they are reported unnamed.
  const RuntimeNames* runtime_names = nullptr;
  // The file and line of the hung thread's frames named from a perf map, where the runtime
  // gave them (jit_frame_lines.h: a JVM's thread dump); nullptr: none.
  const JitFrameLines* jit_lines = nullptr;
};

HangRecord Materialize(const HangData& hang, const MaterializeOptions& options);

// /proc/self/exe, or "" when unreadable.
std::string MainExecutablePath();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_MATERIALIZE_H_
