// SignalSampler: captures a thread of this process by sending it a real-time signal (Linux).
//
// The handler copies registers from the ucontext, walks the frame-pointer chain and copies the
// top of the stack into the sampler's own preallocated storage; Capture() copies that into the
// caller's CaptureBuffer once the request is done. The handler is async-signal-safe,
// allocation-free and bounded; an atomic request state machine (requested -> claimed -> done /
// abandoned, unwind/signal_channel.h) makes sure a request that timed out is never written
// late, and only signals sent by this sampler for the current request are honoured. Around
// the signal, on the calling thread: the scheduler state from /proc (before) and the target's
// CPU time (while it answers). Linux x86_64 and aarch64.
#ifndef HANGWATCH_UNWIND_SIGNAL_SAMPLER_H_
#define HANGWATCH_UNWIND_SIGNAL_SAMPLER_H_

#include <chrono>
#include <memory>
#include <string>

#include "unwind/thread_capture.h"

namespace hangwatch::unwind {
namespace internal {
class SignalChannel;
struct SchedStateFiles;
}  // namespace internal

struct SignalSamplerOptions {
  // Real-time signal to use; 0 picks the highest real-time signal nobody has a handler for.
  int signal = 0;
  // How long Capture() waits for the target to answer.
  std::chrono::nanoseconds timeout = std::chrono::milliseconds(20);
  // Bounds of the sampler's own preallocated capture storage. The handler writes only there;
  // Capture() copies the result into the caller's buffer once the request is done, so a late
  // handler can never write into memory the caller has moved on with.
  size_t max_frames = 256;
  size_t max_stack_bytes = 64 * 1024;
  // Room for the capture hook's words (capture_hook.h), e.g. 2 per Python frame.
  size_t max_extra_words = 1024;
  // Read the target's scheduler state from /proc before each signal (unwind/internal/task_file.h:
  // "running" from .../syscall, else the letter from .../stat). It is the most expensive part
  // of a capture on the sampling side after the signal itself (about a microsecond for a
  // running thread), so a caller that already knows the state (e.g. it read /proc itself to
  // decide whether to interrupt at all) may turn it off; sched_state is then '?'.
  bool read_sched_state = true;
  // Capture() spins this long waiting for the answer before it sleeps on a futex (which costs
  // the handler a wake-up system call and the sampler a reschedule). Short on purpose: on a
  // virtual machine with busy vCPUs, a spinning sampler was measured to delay the target's
  // answer by about as long as it spins (see README, Performance).
  std::chrono::nanoseconds spin = std::chrono::microseconds(5);
};

class SignalSampler final : public ThreadSampler {
 public:
  // Installs the handler. Returns nullptr and sets *error when the requested signal already
  // has a handler (it is never clobbered), when no real-time signal is free, or when another
  // SignalSampler exists in the process.
  static std::unique_ptr<SignalSampler> Create(const SignalSamplerOptions& options,
                                               std::string* error);
  // Restores the signal's previous disposition. An abandoned request still in flight is waited
  // for (bounded: the handler itself is bounded) before the storage goes away.
  ~SignalSampler() override;

  CaptureStatus Capture(const ThreadInfo& target, CaptureBuffer* out) override;

  int signal_number() const { return signal_; }
  // Handler counters, process-wide: signals it ignored (not sent by a sampler of this process
  // for the current request: kill, sigqueue, stale or foreign signals) and requests it answered.
  struct Stats {
    uint64_t signals_ignored = 0;
    uint64_t requests_answered = 0;
  };
  static Stats stats();

  // In the child of fork(): forgets the parent's sampler (restoring the signal's previous
  // disposition) so that the child can create its own. The parent's SignalSampler object must
  // then be leaked, never destroyed, in the child. Async-signal-safe.
  static void ForgetAfterFork();

  // errno of the last kError (e.g. EAGAIN: the kernel's queue of pending signals is full).
  int last_errno() const { return last_errno_; }

  // What the handler works with; public only so that the handler (a free function) can name
  // it. Opaque outside signal_sampler.cc.
  struct HandlerState;

 private:
  SignalSampler(const SignalSamplerOptions& options);
  int signal_ = 0;
  SignalSamplerOptions options_;
  std::unique_ptr<HandlerState> state_;  // preallocated storage the handler writes into
  std::unique_ptr<internal::SignalChannel> channel_;
  std::unique_ptr<internal::SchedStateFiles> state_files_;  // the last target's, kept open
  int last_errno_ = 0;
};

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_SIGNAL_SAMPLER_H_
