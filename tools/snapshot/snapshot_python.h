// `hangwatch snapshot` of a Python process: each thread's Python frames (python/) read while
// the thread is stopped, then put in its native stack in place of the interpreter's eval-loop
// frames (`_PyEval_EvalFrameDefault`), like `py-spy dump --native`.
//
// Where they go: python/frame_placement.h (the same placement as the agent's).
#ifndef HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_PYTHON_H_
#define HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_PYTHON_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "python/frame_chain.h"
#include "python/python_process.h"
#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_output.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

class SnapshotPython {
 public:
  // Before the stop: finds the interpreter of `pid` and checks its layout. When the process
  // runs CPython but its frames cannot be read, one line in *notes says why. Buffers for
  // `max_threads` threads of `max_frames` frames each are allocated here.
  SnapshotPython(pid_t pid, const symbols::ProcessModules& modules, size_t max_threads,
                 size_t max_frames, std::vector<std::string>* notes);

  bool active() const { return process_ != nullptr; }
  // "python3.11.2 (/usr/bin/python3.11)"
  std::string Describe() const;

  // Sets the capture's while_stopped hook to ReadThread (when active).
  void Hook(unwind::PtraceCaptureOptions* options);

  // After symbolization: each thread's Python frames in its native stack (see above). Notes
  // say what did not fit.
  void Merge(std::vector<OutThread>* threads, std::vector<std::string>* notes);

  // How long the chains took to read inside the stop window (all threads).
  uint64_t read_ns() const { return read_ns_; }

 private:
  struct Slot {
    pid_t tid = 0;
    size_t count = 0;
    python::ChainEnd end = python::ChainEnd::kComplete;
    std::vector<python::PythonFrame> frames;  // sized before the stop
  };
  static void ReadThread(void* self, const unwind::PtraceThread& thread);
  const Slot* Find(pid_t tid) const;
  bool InEvalLoop(uint64_t addr, bool is_pc) const;

  std::unique_ptr<python::PythonProcess> process_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
  size_t dropped_ = 0;  // threads without a free slot
  uint64_t read_ns_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_PYTHON_H_
