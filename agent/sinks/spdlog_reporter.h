// The spdlog sink: one WARN line per hang (duration, CPU %, class, samples, fingerprint),
// followed by the dominant stack, one INFO line per frame; with Config::log_lag, one INFO line
// per lag record.
#ifndef HANGWATCH_AGENT_SINKS_SPDLOG_REPORTER_H_
#define HANGWATCH_AGENT_SINKS_SPDLOG_REPORTER_H_

#include <memory>
#include <string>
#include <utility>

#include "agent/sinks/hang_sink.h"
#include "hangwatch/hang_record.h"

namespace spdlog {
class logger;
}

namespace hangwatch::agent {

// The logger named "hangwatch" from spdlog's registry, created (stderr, colored when a
// terminal) on first use.
std::shared_ptr<spdlog::logger> DefaultLogger();

// The WARN line, without the stack (tests and the CLI reuse it).
std::string HangSummaryLine(const HangRecord& record);
// "#3 0x55d0c0a01234 Foo::Bar() (demo+0x1234)"
std::string FrameLine(size_t index, const Frame& frame);

void LogHang(spdlog::logger& logger, const HangRecord& record);
// One INFO line for a lag record: "hangwatch: lag over 60.0 s: 3600 passes (busy 12.5 s), p50
// 1.2 ms, p95 ..., max ...; slow: 14 > 16 ms, 2 > 100 ms".
void LogLag(spdlog::logger& logger, const report::Lag& record);

// The spdlog sink (Config::logger, Config::log_hangs): LogHang for every hang, LogLag for every
// lag record unless `log_lag` is false (Config::log_lag). Inside the busy section, so that
// fork() never finds spdlog's lock held by the watchdog.
class SpdlogSink final : public HangSink {
 public:
  explicit SpdlogSink(std::shared_ptr<spdlog::logger> logger, bool log_lag = true)
      : logger_(std::move(logger)), log_lag_(log_lag) {}

  bool MayBlock() const override { return false; }
  void OnHang(const HangRecord& record, SinkErrors*) override { LogHang(*logger_, record); }
  void OnLag(const report::Lag& record, SinkErrors*) override {
    if (log_lag_) LogLag(*logger_, record);
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  bool log_lag_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_SPDLOG_REPORTER_H_
