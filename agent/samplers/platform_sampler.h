// The sampler that captures the watched thread on this platform, made from the Config. One
// definition per platform, as MakeSystemWatchdogEnv (agent/core/watchdog_env.h) has:
// platform_sampler.cc (Linux: threads asleep in the kernel read through /proc, running ones
// interrupted by a signal) and mach/mach_platform_sampler.cc (Apple: the thread suspended, its
// registers and stack copied), so that the agent itself has no platform branches.
#ifndef HANGWATCH_AGENT_SAMPLERS_PLATFORM_SAMPLER_H_
#define HANGWATCH_AGENT_SAMPLERS_PLATFORM_SAMPLER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/samplers/jit_code_names.h"
#include "agent/samplers/runtime_frames.h"
#include "agent/samplers/wait_cause_probe.h"
#include "hangwatch/hangwatch.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

struct PlatformSampler {
  // What the watchdog calls.
  std::unique_ptr<unwind::ThreadSampler> sampler;
  // The signal sampler `sampler` falls back to (Linux), owned here because `sampler` only points
  // at it; null on Apple.
  std::unique_ptr<unwind::ThreadSampler> signal_sampler;
  // Why a blocked sample waits (Linux: cause/); null where the platform has none.
  std::unique_ptr<WaitCauseProbe> cause_probe;
  // The sampler of lock owners (Linux: a second ProcFirstSampler over the same signal sampler,
  // so that each keeps its thread's files open); null: `sampler`.
  std::unique_ptr<OwnerSampler> other_sampler;
  // The sampling signal (Config::signal, or the one picked), 0 when the platform needs none.
  int signal = 0;
  // A language runtime's frames merged into the samples (Linux: the Python frames of a
  // CPython process, python_stacks.h); null when there is none.
  std::unique_ptr<RuntimeFrames> runtime_frames;
  // For each other watched thread (hangwatch/threads.h), made by Start(): a sampler of its own
  // over the same signal, so that each keeps its thread's files open (null: `sampler` serves
  // every thread), and a cause probe of its own, since a probe keeps the state of one hang
  // (null: no causes for other threads).
  std::function<std::unique_ptr<unwind::ThreadSampler>()> make_thread_sampler;
  std::function<std::unique_ptr<WaitCauseProbe>()> make_cause_probe;
  // A runtime that compiles code at run time, asked for its names when a hang opens (Linux: a
  // HotSpot JVM, jvm_perf_map_request.h); null when there is none.
  std::unique_ptr<JitCodeNames> jit_names;
  // What to say once at start (e.g. why a Python process gets no Python frames).
  std::vector<std::string> notes;
};

// Makes this platform's sampler with Config::signal, capture_timeout, max_frames and
// stack_copy_bytes. False with *error (without the "hangwatch: " prefix) when it cannot be made
// (the signal is taken, the Mach timebase is unreadable).
bool MakePlatformSampler(const Config& config, PlatformSampler* out, std::string* error);

// In the child of fork(), for a sampler the parent made with a signal_sampler: gives back what
// it holds of the process (the signal's disposition). Async-signal-safe.
void ForgetPlatformSamplerAfterFork();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SAMPLERS_PLATFORM_SAMPLER_H_
