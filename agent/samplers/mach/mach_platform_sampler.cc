// MakePlatformSampler for Apple platforms (the Linux one is agent/samplers/platform_sampler.cc):
// Mach suspends the thread, copies its registers and stack, resumes it (unwind/mach/). No signal.
#if defined(__APPLE__)

#include <chrono>

#include "agent/samplers/platform_sampler.h"
#include "unwind/mach/mach_sampler.h"

namespace hangwatch::agent {

bool MakePlatformSampler(const Config& config, PlatformSampler* out, std::string* error) {
  unwind::mach::MachSamplerOptions mo;
  mo.max_pause = std::chrono::duration_cast<std::chrono::nanoseconds>(config.capture_timeout);
  out->sampler = unwind::mach::MachSampler::Create(mo, error);
  return out->sampler != nullptr;
}

// Nothing to give back: a Mach sampler holds no signal (and is never a signal_sampler).
void ForgetPlatformSamplerAfterFork() {}

}  // namespace hangwatch::agent

#endif  // defined(__APPLE__)
