// The logger the preload shim's agent reports hangs to (the live report): spdlog's colored
// stderr logger, each line dropped unless the loader says descriptor 2 is still the file it may
// print on (shim_stderr.h, reached through the loader's services: agent_entry.h). Part of
// libhangwatch_preload_agent.so.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_STDERR_LOGGER_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_STDERR_LOGGER_H_

#include <memory>

namespace spdlog {
class logger;
}

namespace hangwatch::preload {

// `stderr_usable` is asked before each line. The first call's function is kept.
std::shared_ptr<spdlog::logger> GuardedStderrLogger(int (*stderr_usable)());

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_STDERR_LOGGER_H_
