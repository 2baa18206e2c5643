#include "integrations/preload/agent_stderr_logger.h"

#include <memory>
#include <mutex>

#include "spdlog/sinks/base_sink.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace hangwatch::preload {
namespace {

// Forwards to spdlog's stderr sink while descriptor 2 is still the allowed file.
class GuardedSink final : public spdlog::sinks::sink {
 public:
  explicit GuardedSink(int (*stderr_usable)())
      : stderr_usable_(stderr_usable),
        inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}
  void log(const spdlog::details::log_msg& msg) override {
    if (stderr_usable_() != 0) inner_->log(msg);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  int (*stderr_usable_)();
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> inner_;
};

}  // namespace

std::shared_ptr<spdlog::logger> GuardedStderrLogger(int (*stderr_usable)()) {
  // Leaked on purpose: the agent may log from Stop() at exit, after static destructors ran.
  static auto* logger = new std::shared_ptr<spdlog::logger>(
      std::make_shared<spdlog::logger>("hangwatch", std::make_shared<GuardedSink>(stderr_usable)));
  return *logger;
}

}  // namespace hangwatch::preload
