// `hangwatch snapshot` of a Ruby process: each thread's Ruby frames (ruby/) read while the
// thread is stopped, then put in its native stack in place of the VM's `rb_vm_exec` frames,
// one group of Ruby frames per native call of the VM (ruby/README.md).
#ifndef HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUBY_H_
#define HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUBY_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ruby/control_frames.h"
#include "ruby/ruby_process.h"
#include "symbols/process_modules.h"
#include "tools/snapshot/snapshot_output.h"
#include "unwind/ptrace_capture.h"

namespace hangwatch::tools {

class SnapshotRuby {
 public:
  // Before the stop: finds the VM of `pid` and checks its layout. When the process runs Ruby
  // but its frames cannot be read, one line in *notes says why. Buffers for `max_threads`
  // threads of `max_frames` frames each are allocated here.
  SnapshotRuby(pid_t pid, const symbols::ProcessModules& modules, size_t max_threads,
               size_t max_frames, std::vector<std::string>* notes);

  // Before the stop: the reader of `pid` (0: none) hooked into `options`, or nullptr when `pid`
  // runs no Ruby whose frames can be read (a note says why when it runs one).
  static std::unique_ptr<SnapshotRuby> Prepare(pid_t pid, const symbols::ProcessModules* modules,
                                               size_t max_threads, size_t max_frames,
                                               std::vector<std::string>* notes,
                                               unwind::PtraceCaptureOptions* options);

  bool active() const { return process_ != nullptr; }
  // "ruby 3.1.2 (/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2)"
  std::string Describe() const;

  // Sets the capture's while_stopped hook to ReadThread (when active and no other is set).
  void Hook(unwind::PtraceCaptureOptions* options);

  // After symbolization: each thread's Ruby frames in its native stack; false when not active.
  // The frames' strings live in this object: it must outlive the output.
  bool Merge(std::vector<OutThread>* threads, std::vector<std::string>* notes);

  // How long the frames took to read inside the stop window (all threads).
  uint64_t read_ns() const { return read_ns_; }
  // --timings' line: "ruby: control frames read in 0.018 ms inside the stop window\n".
  std::string TimingsLine() const;

 private:
  struct Slot {
    pid_t tid = 0;
    size_t count = 0;
    ruby::FramesEnd end = ruby::FramesEnd::kComplete;
    std::vector<ruby::RubyFrame> frames;  // sized before the stop
  };
  static void ReadThread(void* self, const unwind::PtraceThread& thread);
  const Slot* Find(pid_t tid) const;

  std::unique_ptr<ruby::RubyProcess> process_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
  size_t dropped_ = 0;  // threads without a free slot
  uint64_t read_ns_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_SNAPSHOT_RUBY_H_
