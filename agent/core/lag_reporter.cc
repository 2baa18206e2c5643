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

void LagReporter::set_queued_passes(const internal::PassContext* context) {
  queued_source_ = context;
  // Only what the thread notes from now on: a reused slot's words hold its last thread's.
  if (context != nullptr) queued_read_ = context->delay_writes.load(std::memory_order_acquire);
}

void LagReporter::DrainQueuedPasses() {
  if (queued_source_ == nullptr) return;
  const internal::PassContext& c = *queued_source_;
  const uint64_t written = c.delay_writes.load(std::memory_order_acquire);
  uint64_t from = queued_read_;
  if (written - from > internal::kDelayMoveSlots) {  // overwritten before they were read
    queued_lost_ += written - from - internal::kDelayMoveSlots;
    from = written - internal::kDelayMoveSlots;
  }
  for (uint64_t i = from; i < written; ++i) {
    const uint64_t move =
        c.delay_moves[i % internal::kDelayMoveSlots].load(std::memory_order_relaxed);
    // A slot the thread wrote again while it was read here holds a later pass: lost, never
    // counted as another.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (c.delay_writes.load(std::memory_order_relaxed) - i > internal::kDelayMoveSlots) {
      ++queued_lost_;
      continue;
    }
    const int running = internal::DelayMoveRunning(move);
    const int delay = internal::DelayMoveDelay(move);
    if (running >= pass_histogram::kBuckets || delay >= pass_histogram::kBuckets) continue;
    ++queued_passes_;
    if (running == delay) continue;
    --moves_[running];
    ++moves_[delay];
  }
  queued_read_ = written;
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
  const uint64_t queued = queued_passes_;
  const uint64_t lost = queued_lost_;
  std::map<int, int64_t> moves = std::move(moves_);
  moves_.clear();
  queued_passes_ = 0;
  queued_lost_ = 0;
  if (passes.passes() == 0) return std::nullopt;
  report::Lag record = identity_;
  record.start_unix_ms = start;
  record.end_unix_ms = now_unix_ms;
  if (queued > 0) {
    // The interval's passes, each with a known wait moved to its delay's bucket. A pass noted
    // here but counted in the previous interval (it ended as that one closed) finds no count to
    // leave: its bucket stays at 0.
    for (int i = 0; i < pass_histogram::kBuckets; ++i) {
      auto m = moves.find(i);
      const int64_t n = static_cast<int64_t>(passes.count(i)) + (m == moves.end() ? 0 : m->second);
      if (n > 0) record.delay.AddToBucket(i, static_cast<uint64_t>(n));
    }
  }
  record.queued_passes = queued;
  record.queued_passes_lost = lost;
  record.passes = std::move(passes);
  return record;
}

}  // namespace hangwatch::agent
