// SinkDispatch: how the watchdog hands a record (a hang, a lag interval) to the agent's sinks
// (agent/sinks/hang_sink.h), without ever making a fork() wait for a slow sink.
//
// The watchdog holds `busy` (the agent's mutex that PrepareFork takes) while it works. Sinks
// that may block for long without holding a lock in user space (the file write: a FIFO, a hung
// network file system; the user's callbacks) run with it released; the others with it held.
// What failed is logged once it is held again. A sink that runs out of memory misses the record
// (counted as unreported); the others still get it, and `busy` is held again whatever happened.
#ifndef HANGWATCH_AGENT_CORE_SINK_DISPATCH_H_
#define HANGWATCH_AGENT_CORE_SINK_DISPATCH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "agent/sinks/hang_sink.h"
#include "hang/model/hang_data.h"
#include "hang/model/materialize.h"
#include "report/report_record.h"
#include "spdlog/spdlog.h"

namespace hangwatch::agent {

class SinkDispatch {
 public:
  // `busy` and `unreported` are the agent's; both outlive this.
  SinkDispatch(std::mutex* busy, std::atomic<uint64_t>* unreported)
      : busy_(busy), unreported_(unreported) {}

  std::vector<std::unique_ptr<HangSink>>& sinks() { return sinks_; }
  void set_logger(std::shared_ptr<spdlog::logger> logger) { logger_ = std::move(logger); }
  // Whether any sink wants records (else a hang is not even materialized).
  bool Wants() const;

  // `busy` held by the caller (the watchdog).
  void Hang(const HangRecord& record) {
    Give([&](HangSink& sink, SinkErrors* errors) { sink.OnHang(record, errors); });
  }
  void Lag(const report::Lag& record) {
    Give([&](HangSink& sink, SinkErrors* errors) { sink.OnLag(record, errors); });
  }
  // A closed hang, materialized with `options` and handed over. Near the memory limit
  // (memory_headroom.h), or when symbolizing runs out of memory, the hang is told unnamed; when
  // even that fails it is counted as unreported and `hangwatch run` told (never an exception
  // out of the watchdog thread).
  void Materialized(const HangData& hang, MaterializeOptions options);

  // Stop(): each sink flushed, then the list emptied. In a fork child: what the sinks hold of
  // the process given back (async-signal-safe).
  void FlushAndClear();
  void ReleaseAfterFork();

 private:
  template <typename GiveOne>
  void Give(const GiveOne& give) {
    SinkErrors errors;
    auto give_one = [&](HangSink& sink) {
      try {
        give(sink, &errors);
      } catch (const std::bad_alloc&) {
        unreported_->fetch_add(1, std::memory_order_relaxed);
      }
    };
    for (const auto& sink : sinks_) {
      if (!sink->MayBlock()) give_one(*sink);
    }
    busy_->unlock();
    for (const auto& sink : sinks_) {
      if (sink->MayBlock()) give_one(*sink);
    }
    busy_->lock();
    LogErrors(errors);
  }
  void LogErrors(const SinkErrors& errors);

  std::mutex* busy_;
  std::atomic<uint64_t>* unreported_;
  std::shared_ptr<spdlog::logger> logger_;  // where sink errors go
  std::vector<std::unique_ptr<HangSink>> sinks_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_SINK_DISPATCH_H_
