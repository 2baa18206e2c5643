#include "agent/core/lag_reporter.h"

#include <utility>

namespace hangwatch::agent {

LagReporter::LagReporter(report::Lag identity, uint64_t interval_ns)
    : identity_(std::move(identity)), interval_ns_(interval_ns) {}

void LagReporter::Begin(const PassHistogram& now, uint64_t now_ns, int64_t now_unix_ms) {
  first_ = now;
  previous_ = now;
  start_unix_ms_ = now_unix_ms;
  due_ns_ = interval_ns_ == 0 ? UINT64_MAX : now_ns + interval_ns_;
}

std::optional<report::Lag> LagReporter::Close(const PassHistogram& now, uint64_t now_ns,
                                              int64_t now_unix_ms) {
  PassHistogram passes = now.Since(previous_);
  previous_ = now;
  const int64_t start = start_unix_ms_;
  start_unix_ms_ = now_unix_ms;
  // The next interval is due one interval after this one was; a watchdog late by more than an
  // interval (the process was stopped) starts afresh from now.
  if (interval_ns_ != 0) {
    due_ns_ = due_ns_ + interval_ns_ > now_ns ? due_ns_ + interval_ns_ : now_ns + interval_ns_;
  }
  if (passes.passes() == 0) return std::nullopt;
  report::Lag record = identity_;
  record.start_unix_ms = start;
  record.end_unix_ms = now_unix_ms;
  record.passes = std::move(passes);
  return record;
}

}  // namespace hangwatch::agent
