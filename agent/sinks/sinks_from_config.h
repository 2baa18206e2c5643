// The list of sinks a Config asks for: the one place that knows which sinks exist and in which
// order they see each record. The agent makes it once, at Start().
#ifndef HANGWATCH_AGENT_SINKS_SINKS_FROM_CONFIG_H_
#define HANGWATCH_AGENT_SINKS_SINKS_FROM_CONFIG_H_

#include <memory>
#include <string>
#include <vector>

#include "agent/sinks/hang_sink.h"
#include "hangwatch/hangwatch.h"

namespace spdlog {
class logger;
}

namespace hangwatch::agent {

// Appends to `sinks`, in the order they see each record: SpdlogSink (when `logger` is set and
// `config.log_hangs`), JsonlSink (when `config.json_path` is set; its file opened here), then
// CallbackSink (`config.on_hang` and the AddHangCallback() registry; always). `logger` is the
// agent's: Config::logger, else the default one. False with *error (without the "hangwatch: "
// prefix) when the JSON Lines file cannot be opened; `sinks` then holds those made before it.
bool SinksFromConfig(const Config& config, std::shared_ptr<spdlog::logger> logger,
                     std::vector<std::unique_ptr<HangSink>>* sinks, std::string* error);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_SINKS_FROM_CONFIG_H_
