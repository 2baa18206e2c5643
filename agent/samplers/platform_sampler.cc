// MakePlatformSampler for Linux (the Apple one is agent/samplers/mach/mach_platform_sampler.cc).
#include "agent/samplers/platform_sampler.h"

#include <chrono>

#include "agent/samplers/js_stacks.h"
#include "agent/samplers/jvm_perf_map_request.h"
#include "agent/samplers/python_stacks.h"
#include "agent/samplers/ruby_stacks.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/signal_sampler.h"

namespace hangwatch::agent {

bool MakePlatformSampler(const Config& config, PlatformSampler* out, std::string* error) {
  unwind::SignalSamplerOptions so;
  so.signal = config.signal;
  so.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(config.capture_timeout);
  so.max_frames = config.max_frames;
  so.max_stack_bytes = config.stack_copy_bytes;
  // ProcFirstSampler reads the scheduler state right before falling back to the signal; a
  // second read would only lengthen the round trip (README, Performance).
  so.read_sched_state = false;
  // A CPython process: its Python frames, recorded by a capture hook (python_stacks.h).
  std::string note;
  std::unique_ptr<PythonStacks> python = PythonStacks::Create(config.max_frames, &note);
  if (!note.empty()) out->notes.push_back(note);
  // Else a Ruby process: its Ruby frames, recorded by a capture hook too (ruby_stacks.h).
  std::unique_ptr<RubyStacks> ruby =
      python == nullptr ? RubyStacks::Create(config.max_frames, &out->notes) : nullptr;
  so.max_extra_words = python != nullptr ? python->extra_words()
                       : ruby != nullptr ? ruby->extra_words()
                                         : 0;
  auto sampler = unwind::SignalSampler::Create(so, error);
  if (sampler == nullptr) {
    return false;
  }
  out->signal = sampler->signal_number();
  // Threads sleeping in the kernel are read through /proc (no signal, no EINTR); running ones
  // are interrupted (unwind/proc_blocked_reader.h).
  out->signal_sampler = std::move(sampler);
  out->sampler = std::make_unique<unwind::ProcFirstSampler>(out->signal_sampler.get());
  out->cause_probe = MakeLinuxWaitCauseProbe();
  out->other_sampler = MakeLinuxOwnerSampler(out->signal_sampler.get());
  out->runtime_frames = std::move(python);
  if (!out->runtime_frames) out->runtime_frames = std::move(ruby);
  // Else node: its JS frames, read on the watchdog (js_stacks.h).
  if (!out->runtime_frames) out->runtime_frames = JsStacks::Create(config.max_frames, &out->notes);
  // A JVM: the names of its compiled Java code, asked for when a hang opens.
  out->jit_names = JvmPerfMapRequest::Create();
  unwind::ThreadSampler* signal_sampler = out->signal_sampler.get();
  out->make_thread_sampler = [signal_sampler] {
    return std::make_unique<unwind::ProcFirstSampler>(signal_sampler);
  };
  out->make_cause_probe = [] { return MakeLinuxWaitCauseProbe(); };
  return true;
}

void ForgetPlatformSamplerAfterFork() { unwind::SignalSampler::ForgetAfterFork(); }

}  // namespace hangwatch::agent
