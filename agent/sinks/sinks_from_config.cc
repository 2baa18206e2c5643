#include "agent/sinks/sinks_from_config.h"

#include <utility>

#include "agent/sinks/callback_sink.h"
#include "agent/sinks/jsonl_sink.h"
#include "agent/sinks/spdlog_reporter.h"

namespace hangwatch::agent {

bool SinksFromConfig(const Config& config, std::shared_ptr<spdlog::logger> logger,
                     std::vector<std::unique_ptr<HangSink>>* sinks, std::string* error) {
  // Those that may block come after the others (hang_sink.h).
  if (logger && config.log_hangs) {
    sinks->push_back(std::make_unique<SpdlogSink>(std::move(logger), config.log_lag));
  }
  if (!config.json_path.empty()) {
    auto json = std::make_unique<JsonlSink>(config.json_path, config.json_max_bytes);
    if (!json->Open(error)) return false;
    sinks->push_back(std::move(json));
  }
  sinks->push_back(std::make_unique<CallbackSink>(config.on_hang));
  return true;
}

}  // namespace hangwatch::agent
