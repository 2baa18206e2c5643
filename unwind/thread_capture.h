// What one capture of a thread brings back, and the interface that produces it.
//
// Capturing = interrupting (or otherwise reading) a thread and copying out its registers, the
// frame-pointer chain and a bounded slice of its stack, into storage that the caller allocated
// beforehand. Walking with CFI and symbolizing happen later, elsewhere, on that copy.
#ifndef HANGWATCH_UNWIND_THREAD_CAPTURE_H_
#define HANGWATCH_UNWIND_THREAD_CAPTURE_H_

#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hangwatch/hang_record.h"
#include "unwind/memory_view.h"
#include "unwind/registers.h"

namespace hangwatch::unwind {

// A thread that may be captured. Filled by RegisterCurrentThread() on the thread itself.
struct ThreadInfo {
  pid_t tid = 0;
  pthread_t handle{};
  StackBounds stack;      // the whole stack mapping of the thread
  clockid_t cpu_clock{};  // pthread_getcpuclockid(handle)
};

// Records the calling thread's tid, stack bounds and CPU clock. Call it on the thread that will
// be captured, off any hot path (it may read /proc/self/maps). Returns false on failure.
bool RegisterCurrentThread(ThreadInfo* out);

enum class CaptureStatus : uint8_t {
  kOk = 0,
  kThreadExited,   // the thread no longer exists
  kSignalBlocked,  // the thread blocks the sampling signal
  kTimedOut,       // no answer within the timeout (stopped, uninterruptible sleep, ...)
  kBusy,           // an earlier, abandoned request is still being answered
  kNotStarted,     // the sampler is not installed
  kSignalTaken,    // the application replaced the sampling signal's handler: nothing was sent
  kError,          // anything else (errno-level failure)
};
const char* CaptureStatusName(CaptureStatus status);

// How a sample was obtained (CaptureBuffer::method): the signal, /proc for a thread asleep in
// the kernel (proc_blocked_reader.h), or a Mach thread suspension (unwind/mach/). The one enum of
// the public record (hang_record.h), so that a capture's method is reported as it is.
using ::hangwatch::SampleMethod;

// Storage for one capture. Allocated once, up front, by whoever owns the sampling; a capture
// only writes into it. Never reallocates.
class CaptureBuffer {
 public:
  // `max_extra_words`: room for what the capture hook (capture_hook.h) writes; 0: none.
  CaptureBuffer(size_t max_frames, size_t max_stack_bytes, size_t max_extra_words = 0);
  CaptureBuffer(const CaptureBuffer&) = delete;
  CaptureBuffer& operator=(const CaptureBuffer&) = delete;

  size_t max_frames() const { return max_frames_; }
  size_t max_stack_bytes() const { return max_stack_bytes_; }

  // Clears the results (not the storage). Called by samplers before each capture.
  void Reset();

  // The copied stack slice as a view in the target's address space.
  MemoryView stack_view() const { return MemoryView{stack_base, stack_size, stack_.get()}; }
  unsigned char* stack_storage() { return stack_.get(); }
  uintptr_t* frame_storage() { return frames_.get(); }
  const uintptr_t* frames() const { return frames_.get(); }
  size_t max_extra_words() const { return max_extra_words_; }
  uint64_t* extra_storage() { return extra_.get(); }
  // The capture hook's words of the last capture (num_extra of them).
  const uint64_t* extra() const { return extra_.get(); }

  // ---- results of the last capture ----
  Registers regs;
  uintptr_t stack_base = 0;  // target address of the first copied byte (at or below regs.sp)
  size_t stack_size = 0;     // bytes copied
  size_t num_frames = 0;     // frame-pointer walk done at capture time; frames()[0] == regs.pc
  bool frames_truncated = false;
  uint64_t timestamp_ns = 0;  // CLOCK_MONOTONIC at the moment of capture
  uint64_t cpu_time_ns = 0;   // the thread's total CPU time, read right after the capture
  char sched_state = '?';     // R, S, D, T, t, Z, ... from /proc/self/task/TID/stat
  uint64_t pause_ns = 0;      // time the target spent in the handler / suspended
  SampleMethod method = SampleMethod::kSignal;
  // A /proc read (SampleMethod::kProc): the system call the thread sleeps in, as its syscall
  // line said (number and arguments), so that whoever asks why it waits need not read it again.
  bool syscall_known = false;
  int64_t syscall_nr = -1;
  uint64_t syscall_args[6] = {};
  size_t num_extra = 0;  // words the capture hook wrote into extra_storage()

 private:
  size_t max_frames_;
  size_t max_stack_bytes_;
  size_t max_extra_words_;
  std::unique_ptr<uint64_t[]> extra_;
  std::unique_ptr<uintptr_t[]> frames_;
  std::unique_ptr<unsigned char[]> stack_;
};

// Anything that can capture a registered thread. The agent samples through this interface, so
// its tests can use a fake.
class ThreadSampler {
 public:
  virtual ~ThreadSampler() = default;
  // Captures `target` into `out` in bounded time. Not async-signal-safe; one caller at a time.
  virtual CaptureStatus Capture(const ThreadInfo& target, CaptureBuffer* out) = 0;
};

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_THREAD_CAPTURE_H_
