// LagReporter: cuts the pass histogram (pass_timer.h) into intervals of Config::lag_interval,
// each one a {"type":"lag"} record (report/report_record.h) of only its own passes, so that
// records of many intervals, processes and hosts merge by addition. Watchdog thread only.
#ifndef HANGWATCH_AGENT_CORE_LAG_REPORTER_H_
#define HANGWATCH_AGENT_CORE_LAG_REPORTER_H_

#include <cstdint>
#include <optional>

#include <map>

#include "hangwatch/internal/pass_context.h"
#include "hangwatch/pass_histogram.h"
#include "report/report_record.h"

namespace hangwatch::agent {

class LagReporter {
 public:
  // `identity`: pid, process_name, host, labels of every record. interval_ns 0: one interval,
  // closed at Close() only.
  LagReporter(report::Lag identity, uint64_t interval_ns);

  // Starts the first interval with the counters as they are now (`now`: the histogram read
  // from them) at monotonic time `now_ns`, wall time `now_unix_ms`.
  void Begin(const PassHistogram& now, uint64_t now_ns, int64_t now_unix_ms);
  // Monotonic time at which the current interval ends (UINT64_MAX: never, by itself).
  uint64_t due_ns() const { return due_ns_; }
  // Ends the current interval and starts the next. Its record, or nothing when no pass ended
  // in it.
  std::optional<report::Lag> Close(const PassHistogram& now, uint64_t now_ns, int64_t now_unix_ms);
  // Every pass since Begin().
  PassHistogram SinceBegin(const PassHistogram& now) const { return now.Since(first_); }

  // The thread's words where it notes passes with a queued time (PassContext::delay_moves):
  // from now on, DrainQueuedPasses() reads them into the current interval's queued + running
  // histogram (LagRecord::delay). Before Begin().
  void set_queued_passes(const internal::PassContext* context);
  // Reads the passes with a queued time the thread noted since the last call. At every check of
  // the watchdog (the ring holds kDelayMoveSlots), and before reading the counters for Close():
  // a pass is counted before it is noted, so every pass read here is in those counters.
  void DrainQueuedPasses();

 private:
  report::Lag identity_;
  uint64_t interval_ns_;
  PassHistogram first_;     // at Begin()
  PassHistogram previous_;  // at the start of the current interval
  int64_t start_unix_ms_ = 0;
  uint64_t due_ns_ = UINT64_MAX;
  const internal::PassContext* queued_source_ = nullptr;
  uint64_t queued_read_ = 0;    // delay_writes read so far
  uint64_t queued_passes_ = 0;  // in the current interval
  uint64_t queued_lost_ = 0;
  std::map<int, int64_t> moves_;  // bucket -> passes moved into (+) or out of (-) it
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_LAG_REPORTER_H_
