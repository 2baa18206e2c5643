// WaitCauseProbe: on the watchdog thread, right after a sample of the main thread that found it
// asleep, works out why it waits (a WaitCause) and captures the other threads of this process it
// waits for. One implementation per platform: Linux's (wait_cause_probe.cc, over cause/) is made
// by MakePlatformSampler (platform_sampler.h); Apple platforms have none (null).
#ifndef HANGWATCH_AGENT_SAMPLERS_WAIT_CAUSE_PROBE_H_
#define HANGWATCH_AGENT_SAMPLERS_WAIT_CAUSE_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hang/model/wait_cause.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

// What a sample of a thread already knows: its scheduler state and, for a /proc read, its
// system call and stack pointer (the probe then does not read them again).
struct SampledThread {
  char state = '?';
  bool syscall_known = false;
  int64_t syscall_nr = -1;
  const uint64_t* syscall_args = nullptr;  // 6 of them when syscall_known
  uintptr_t sp = 0;
};

// Captures another thread of this process with the agent's own sampler and unwinder; frames
// and methods are written into the caller's arrays, what the capture saw into *sampled (its
// syscall_args stay valid until the next capture). Returns the number of frames (0: failed).
class OtherThreadCapturer {
 public:
  virtual ~OtherThreadCapturer() = default;
  virtual size_t CaptureOther(const unwind::ThreadInfo& thread, uintptr_t* frames,
                              FrameMethod* methods, size_t max_frames, SampledThread* sampled) = 0;
};

// The sampler of the other threads (lock owners): captures like the main thread's sampler, and
// tells when a thread has not run since its last capture (its stack is then the same).
class OwnerSampler {
 public:
  virtual ~OwnerSampler() = default;
  virtual unwind::CaptureStatus Capture(const unwind::ThreadInfo& thread,
                                        unwind::CaptureBuffer* out) = 0;
  virtual bool UnchangedSinceLastRead(const unwind::ThreadInfo& thread) = 0;
};

class WaitCauseProbe {
 public:
  virtual ~WaitCauseProbe() = default;
  // Fills *out for the main thread `main` just sampled (`sampled`). False (and *out cleared)
  // when it does not wait in a system call. Captures lock owners through `capturer` (may be
  // null: no stacks). Allocates nothing.
  virtual bool Probe(const unwind::ThreadInfo& main, const SampledThread& sampled,
                     OtherThreadCapturer* capturer, WaitCause* out) = 0;
  // The first sample of a pass (a hang may follow): what earlier hangs described is forgotten,
  // the scheduling counters of `main` are read. Allocates nothing.
  virtual void HangStarted(const unwind::ThreadInfo& main) { (void)main; }
  // A hang of `main` ends with cause *cause (kNone: no blocked sample said why): refined by
  // the scheduling counters since HangStarted (starved, throttled, pressure, fault).
  virtual void HangEnded(const unwind::ThreadInfo& main, WaitCause* cause) {
    (void)main;
    (void)cause;
  }
};

// Linux: the cause/ probe, and the owners' sampler (a ProcFirstSampler of its own over
// `fallback`, the signal sampler, so that each keeps its thread's /proc files open). Defined in
// wait_cause_probe.cc (not compiled on Apple platforms).
std::unique_ptr<WaitCauseProbe> MakeLinuxWaitCauseProbe();
std::unique_ptr<OwnerSampler> MakeLinuxOwnerSampler(unwind::ThreadSampler* fallback);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_WAIT_CAUSE_PROBE_H_
