#include "unwind/thread_capture.h"

#include <pthread.h>
#include <unistd.h>

namespace hangwatch::unwind {

#if defined(__linux__)
// Linux. (Apple's lives in unwind/mach/thread_registration.cc.)
bool RegisterCurrentThread(ThreadInfo* out) {
  if (out == nullptr) {
    return false;
  }
  const pthread_t self = pthread_self();
  // pthread_getattr_np reports the real stack of the calling thread (for the main thread it
  // reads /proc/self/maps and the stack rlimit): exactly the range that is safe to read.
  pthread_attr_t attr;
  if (pthread_getattr_np(self, &attr) != 0) {
    return false;
  }
  void* stack_addr = nullptr;
  size_t stack_size = 0;
  const int rc = pthread_attr_getstack(&attr, &stack_addr, &stack_size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || stack_addr == nullptr || stack_size == 0) {
    return false;
  }
  clockid_t cpu_clock{};
  if (pthread_getcpuclockid(self, &cpu_clock) != 0) {
    return false;
  }
  ThreadInfo info;
  info.tid = gettid();
  info.handle = self;
  info.stack.lo = reinterpret_cast<uintptr_t>(stack_addr);
  info.stack.hi = info.stack.lo + stack_size;
  info.cpu_clock = cpu_clock;
  *out = info;
  return true;
}
#endif  // __linux__

const char* CaptureStatusName(CaptureStatus status) {
  switch (status) {
    case CaptureStatus::kOk:
      return "ok";
    case CaptureStatus::kThreadExited:
      return "thread exited";
    case CaptureStatus::kSignalBlocked:
      return "signal blocked by the thread";
    case CaptureStatus::kTimedOut:
      return "timed out";
    case CaptureStatus::kBusy:
      return "busy: an abandoned request is still in flight";
    case CaptureStatus::kNotStarted:
      return "sampler not started";
    case CaptureStatus::kSignalTaken:
      return "the application replaced the sampling signal's handler";
    case CaptureStatus::kError:
      return "error";
  }
  return "unknown";
}

CaptureBuffer::CaptureBuffer(size_t max_frames, size_t max_stack_bytes, size_t max_extra_words)
    : max_frames_(max_frames),
      max_stack_bytes_(max_stack_bytes),
      max_extra_words_(max_extra_words),
      extra_(max_extra_words > 0 ? new uint64_t[max_extra_words]() : nullptr),
      frames_(new uintptr_t[max_frames > 0 ? max_frames : 1]()),
      stack_(new unsigned char[max_stack_bytes > 0 ? max_stack_bytes : 1]()) {}

void CaptureBuffer::Reset() {
  regs = Registers{};
  stack_base = 0;
  stack_size = 0;
  num_frames = 0;
  frames_truncated = false;
  timestamp_ns = 0;
  cpu_time_ns = 0;
  sched_state = '?';
  pause_ns = 0;
  method = SampleMethod::kSignal;
  syscall_known = false;
  syscall_nr = -1;
  num_extra = 0;
}

}  // namespace hangwatch::unwind
