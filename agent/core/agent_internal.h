// Hooks behind the public API, for tests: start the agent with a given sampler / environment
// instead of the real ones, and look at its internals.
#ifndef HANGWATCH_AGENT_CORE_AGENT_INTERNAL_H_
#define HANGWATCH_AGENT_CORE_AGENT_INTERNAL_H_

#include <memory>

#include "agent/core/watchdog_env.h"
#include "agent/samplers/leaf_normalizer.h"
#include "hangwatch/hangwatch.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

struct StartHooks {
  std::unique_ptr<unwind::ThreadSampler> sampler;  // null: a SignalSampler
  std::unique_ptr<WatchdogEnv> env;                // null: the system clocks
  std::unique_ptr<LeafNormalizer> normalizer;      // null: the symbolizing one
};

Status StartWithHooks(const Config& config, StartHooks hooks);

// The sampling signal in use (0 when not running or not a SignalSampler).
int SamplingSignal();

// True when the watchdog is following the pass that is running now (it has seen it).
bool WatchdogSeesCurrentPass();

// How many threads besides the main one the watchdog follows now (hangwatch/threads.h).
size_t FollowedThreads();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_AGENT_INTERNAL_H_
