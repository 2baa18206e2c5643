// MachSampler: captures a thread of this process on macOS / iOS by suspending it with Mach.
//
//   thread_suspend -> thread_get_state -> vm_read_overwrite of a bounded stack slice
//   -> thread_resume (on every path) ... then, with the thread running again: frame walk on the
//   copy (pointer-authentication bits stripped, lr as the first caller), and
//   thread_info(THREAD_BASIC_INFO) for CPU time and run state.
//
// While the target is suspended only Mach traps and lock-free reads run: no malloc, no dladdr,
// no logging, no Objective-C, nothing that could wait for a lock the target holds. The
// suspended window is measured with mach_absolute_time and recorded in
// CaptureBuffer::pause_ns; it is bounded by construction (one thread_get_state and at most two
// vm_read_overwrite calls of at most max_stack_bytes) and by MachSamplerOptions::max_pause,
// past which the stack copy is skipped.
//
// Apple platforms only; built and linked for arm64 and x86_64 macOS on Linux by
// scripts/cross/check-macos.
#ifndef HANGWATCH_UNWIND_MACH_MACH_SAMPLER_H_
#define HANGWATCH_UNWIND_MACH_MACH_SAMPLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "unwind/thread_capture.h"

namespace hangwatch::unwind::mach {

struct MachSamplerOptions {
  // Longest the target may stay suspended before the capture gives up on the stack copy (the
  // registers are kept; Capture() returns kTimedOut).
  std::chrono::nanoseconds max_pause = std::chrono::milliseconds(2);
};

class MachSampler final : public ThreadSampler {
 public:
  // Fails (nullptr, reason in *error) only when the Mach timebase cannot be read.
  static std::unique_ptr<MachSampler> Create(const MachSamplerOptions& options, std::string* error);

  // Captures `target` (registered with RegisterCurrentThread on that thread). Refuses the
  // calling thread itself (kError): a thread that suspends itself never resumes.
  CaptureStatus Capture(const ThreadInfo& target, CaptureBuffer* out) override;

 private:
  MachSampler(const MachSamplerOptions& options, uint32_t numer, uint32_t denom);
  uint64_t TicksToNs(uint64_t ticks) const;
  uint64_t NsToTicks(uint64_t ns) const;

  MachSamplerOptions options_;
  uint32_t timebase_numer_;
  uint32_t timebase_denom_;
};

// True on the process's main thread (pthread_main_np): the thread that runs the main run loop.
// Reliable from any thread, unlike "the first thread task_threads lists".
bool IsMainThread();

}  // namespace hangwatch::unwind::mach

#endif  // HANGWATCH_UNWIND_MACH_MACH_SAMPLER_H_
