// The language runtimes of a snapshot's process, one place for all: CPython's and Ruby's frames
// read inside the stop window (hooked into the capture), V8's after it, a JVM's thread dump
// asked once every thread runs again; each merged into the threads' native frames, each said in
// the output's header ("python3.11: Python frames in place of ...") and its --timings line.
// `hangwatch snapshot` (snapshot_command.cc) drives it; each runtime lives in its own file.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUNTIMES_H_
#define HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUNTIMES_H_

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_output.h"
#include "tools/snapshot/snapshot_waits.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

class SnapshotPython;
class SnapshotRuby;
class SnapshotJava;
class SnapshotJs;

// Which runtimes to look for (--no-python, --no-ruby, --no-java, --no-js).
struct RuntimeChoice {
  bool python = true;
  bool ruby = true;
  bool java = true;
  bool js = true;
  int java_timeout_ms = 0;
  size_t max_frames = 0;
};

class SnapshotRuntimes {
 public:
  // `phase`: ends a --timings phase by name.
  SnapshotRuntimes(pid_t pid, const RuntimeChoice& choice, std::function<void(const char*)> phase);
  ~SnapshotRuntimes();

  // Before the stop: each runtime found in `modules` (null: unreadable maps) and, for those read
  // inside the stop window, hooked into `options`.
  void Prepare(const symbols::ProcessModules* modules, unwind::PtraceCaptureOptions* options,
               std::vector<std::string>* notes);
  // After symbolization, the threads running again: every runtime's frames merged into
  // `threads`. Their strings live here: this object outlives the output.
  void Merge(const symbols::ProcessModules& modules, std::vector<OutThread>* threads,
             std::vector<std::string>* notes);
  // The Java threads' lock waits (a JVM's), into the wait-for graph.
  void AddWaits(SnapshotWaits* waits, std::vector<std::string>* notes) const;
  // The header lines of the runtimes whose frames are shown.
  std::vector<RuntimeLine> Lines() const;
  // --timings: each runtime's own line.
  void PrintTimings() const;

 private:
  pid_t pid_;
  RuntimeChoice choice_;
  std::function<void(const char*)> phase_;
  std::unique_ptr<SnapshotPython> python_;
  std::unique_ptr<SnapshotRuby> ruby_;
  std::unique_ptr<SnapshotJava> java_;
  std::unique_ptr<SnapshotJs> js_;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUNTIMES_H_
