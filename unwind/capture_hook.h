// CaptureHook: a language runtime's own state of the captured thread (the Python frames of a
// CPython thread), read at the same moment as its registers and stack, without
// unwind/ knowing what it reads.
//
// One hook per process (SetCaptureHook). It is run:
//  - by SignalSampler's handler, on the interrupted thread, after the registers and the stack
//    are copied (its time counts in the capture's pause);
//  - by the /proc path (ProcFirstSampler) on the sampling thread, while the target provably
//    sleeps in the kernel: between the two reads of its scheduling counters and system call
//    line, so that a thread that ran meanwhile discards the whole capture.
// Either way it must be async-signal-safe: no allocation, no lock, no access that can fault
// (read other memory with ReadSelfV of unwind/self_memory.h, which fails instead), bounded
// time.
// What it writes goes into the capture's extra words (CaptureBuffer::extra()), decoded later
// on the sampling side by whoever installed the hook.
#ifndef HANGWATCH_UNWIND_CAPTURE_HOOK_H_
#define HANGWATCH_UNWIND_CAPTURE_HOOK_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "unwind/memory_view.h"

namespace hangwatch::unwind {

class CaptureHook {
 public:
  virtual ~CaptureHook() = default;
  // Thread `tid` is stopped (or asleep): writes at most `capacity` words about it into `out`
  // and returns how many. 0: nothing to say (not a thread the hook knows). `stack`: the copy of
  // its stack this capture made (from sp up; may be empty), which the hook may read instead of
  // making a system call for memory inside it.
  virtual size_t Read(pid_t tid, const MemoryView& stack, uint64_t* out, size_t capacity) = 0;
};

// Installs `hook` for every later capture (nullptr: none). The hook must stay alive until no
// capture can run it any more: until the samplers are destroyed, or for the process's life.
void SetCaptureHook(CaptureHook* hook);
// The installed hook, or nullptr. Async-signal-safe (one atomic load).
CaptureHook* CurrentCaptureHook();

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_CAPTURE_HOOK_H_
