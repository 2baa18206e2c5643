// `hangwatch snapshot`'s output: the unwound frames of each thread symbolized (one batch per
// module, inlined frames expanded) and printed as text or as one JSON object
// (docs/snapshot-format.md).
#ifndef HANGWATCH_TOOLS_SNAPSHOT_OUTPUT_H_
#define HANGWATCH_TOOLS_SNAPSHOT_OUTPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "symbols/batch_symbolizer.h"
#include "symbols/module_map.h"
#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_unwind.h"
#include "tools/snapshot/snapshot_waits.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

// One symbolized frame (inlined frames of an address are separate entries, innermost first).
// The strings point into the symbol indexes (the BatchSymbolizer keeps them alive).
struct OutFrame {
  uint64_t addr = 0;
  const symbols::Module* module = nullptr;
  uint64_t offset = 0;
  std::string_view symbol;
  std::string_view file;
  int line = 0;
  bool inlined = false;     // inlined into the next entry (same address)
  const char* method = "";  // how the unwinder found it: pc, fp, cfi, lr; "python"
  // An interpreter's frame: its JSON "kind" ("python": snapshot_python.h, "ruby", "js", "java");
  // `addr` is the runtime's object for the function, symbol its name, file and line the
  // source's; no module. nullptr: a native frame.
  const char* kind = nullptr;
  bool line_is_definition = false;  // `line` is the function's first line, not the running one
};

struct OutThread {
  const unwind::PtraceThread* thread = nullptr;
  UnwoundStack stack;
  std::vector<OutFrame> frames;
  // A Java thread's own name (the kernel's is cut at 15 bytes) and Thread.State, from the JVM's
  // thread dump (snapshot_java.h); empty otherwise.
  std::string java_name;
  std::string java_state;
};

// Fills each thread's frames from its unwound stack: module and offset of every address and,
// when `symbolize`, function, file and line from `batch` (inlined frames as separate entries).
// Failures and the symbolizer's warnings are appended to *notes. The frames point into `batch`'s
// answers.
void SymbolizeSnapshot(const symbols::ProcessModules& modules, bool symbolize,
                       std::vector<OutThread>* threads, std::vector<std::string>* notes,
                       symbols::BatchSymbolizer* batch);

// Milliseconds, for printing.
double Ms(uint64_t ns);

// A runtime whose frames the snapshot shows (snapshot_runtimes.h): the JSON field `key`
// ("python", "ruby", "js", "jvm") holds `name` (the interpreter: "python3.11 (...)"); the text
// header says "NAME: WHAT".
struct RuntimeLine {
  const char* key;
  std::string name;
  const char* what;
};

// The text output on stdout (each thread's wait under its header; the wait-for graph and
// deadlocks after the threads), then the notes on stderr. `stop_all`: all threads were stopped
// at once (else one at a time). `runtimes`: those whose frames are shown.
void PrintSnapshotText(bool stop_all, const unwind::PtraceSnapshot& snap, const std::string& exe,
                       const std::vector<RuntimeLine>& runtimes,
                       const std::vector<OutThread>& threads, const SnapshotWaits& waits,
                       const std::vector<std::string>& notes, uint64_t total_ns);

// The JSON output on stdout (the notes are a field; the caller prints them on stderr too).
void PrintSnapshotJson(bool stop_all, const unwind::PtraceSnapshot& snap, const std::string& exe,
                       const std::vector<RuntimeLine>& runtimes,
                       const symbols::ProcessModules& modules,
                       const std::vector<OutThread>& threads, const SnapshotWaits& waits,
                       const std::vector<std::string>& notes, uint64_t total_ns);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_OUTPUT_H_
