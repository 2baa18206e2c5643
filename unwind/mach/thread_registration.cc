// RegisterCurrentThread for Apple platforms (the Linux one lives in unwind/thread_capture.cc).
#if defined(__APPLE__)

#include <pthread.h>

#include "unwind/thread_capture.h"

namespace hangwatch::unwind {

bool RegisterCurrentThread(ThreadInfo* out) {
  if (out == nullptr) return false;
  const pthread_t self = pthread_self();
  // pthread_get_stackaddr_np is the top (highest address) of the stack; it grows down from it.
  const auto top = reinterpret_cast<uintptr_t>(pthread_get_stackaddr_np(self));
  const size_t size = pthread_get_stacksize_np(self);
  if (top == 0 || size == 0 || size > top) return false;
  uint64_t thread_id = 0;
  if (pthread_threadid_np(self, &thread_id) != 0) return false;
  ThreadInfo info;
  // The system-wide thread id, as Activity Monitor, sample(1) and crash reports show it. It is
  // 64-bit; ids below 2^31 (all of them, in practice) survive the narrowing unchanged.
  info.tid = static_cast<pid_t>(thread_id);
  info.handle = self;
  info.stack.lo = top - size;
  info.stack.hi = top;
  // No per-thread CPU clock id on Darwin: MachSampler reads CPU time with thread_info.
  *out = info;
  return true;
}

}  // namespace hangwatch::unwind

#endif  // defined(__APPLE__)
