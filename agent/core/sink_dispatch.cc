#include "agent/core/sink_dispatch.h"

#include <cerrno>
#include <optional>

#include "agent/core/memory_headroom.h"
#include "agent/sinks/jsonl_sink.h"

namespace hangwatch::agent {

bool SinkDispatch::Wants() const {
  for (const auto& sink : sinks_) {
    if (sink->Wants()) return true;
  }
  return false;
}

void SinkDispatch::Materialized(const HangData& hang, MaterializeOptions options) {
  if (!Wants()) return;
  std::optional<HangRecord> record;
  options.symbolize = !NearMemoryLimit();
  try {
    record.emplace(Materialize(hang, options));
  } catch (const std::bad_alloc&) {
    options.symbolize = false;  // the symbol tables are what needs memory
    try {
      record.emplace(Materialize(hang, options));
    } catch (const std::bad_alloc&) {
      unreported_->fetch_add(1, std::memory_order_relaxed);
      // hangwatch run counts it as lost. The note is file I/O: with `busy` released, as the
      // sinks that write are, so that a fork() never waits for it.
      busy_->unlock();
      NotifyUnwrittenRecord("hang", ENOMEM);
      busy_->lock();
      return;
    }
  }
  Hang(*record);
}

void SinkDispatch::LogErrors(const SinkErrors& errors) {
  if (!logger_) return;
  try {
    for (const std::string& error : errors) logger_->error("hangwatch: {}", error);
  } catch (const std::bad_alloc&) {
  }
}

void SinkDispatch::FlushAndClear() {
  for (const auto& sink : sinks_) sink->Flush();
  sinks_.clear();
}

void SinkDispatch::ReleaseAfterFork() {
  for (const auto& sink : sinks_) sink->ReleaseAfterFork();
}

}  // namespace hangwatch::agent
