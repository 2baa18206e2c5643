// The hangwatch metrics (docs/prometheus/README.md lists them) in a prometheus::Registry: each
// hang and lag record adds to counters and to a histogram. One computation for both producers:
// `hangwatch exporter` (tools/exporter/: records read from JSON Lines reports) and
// hangwatch::RegisterMetrics (hangwatch_prometheus.h: the in-process agent's records, live).
// No I/O. Thread-safe: a mutex guards the label bookkeeping (prometheus-cpp's own metrics are).
//
// Besides the metrics the issue names, hangwatch_watched_seconds_total adds up the lag records'
// intervals: the time the processes were watched, the denominator of the hang rate per watched
// hour (docs/report-format.md, "Hang rate").
//
// Every series is labelled `process` (the process name, never the pid) and `host`, plus the
// record's own labels (HANGWATCH_LABELS). The records of a watched thread other than main
// (HangRecord::thread_role, LagRecord::thread_role; hangwatch/threads.h) add `role`: their hangs
// and passes are series of their own, never added to the main thread's, whose series have no
// `role` label (what they were before roles existed). Cardinality stays bounded: no culprit,
// context, signature or pid label unless asked (culprit_top, context_top), at most max_roles
// role values, and at most
// max_label_sets distinct label sets; a record beyond that is counted as skipped
// ("series_limit") rather than making a new series.
#ifndef HANGWATCH_INTEGRATIONS_PROMETHEUS_METRICS_H_
#define HANGWATCH_INTEGRATIONS_PROMETHEUS_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hangwatch/hang_record.h"
#include "hangwatch/pass_histogram.h"

namespace hangwatch {

// Why a line or a file was not counted: the `reason` label of
// hangwatch_exporter_lines_skipped_total.
inline constexpr std::string_view kSkipTorn = "torn";  // not a JSON object, or a bad record
inline constexpr std::string_view kSkipUnknownType = "unknown_type";
inline constexpr std::string_view kSkipOtherVersion = "other_version";
inline constexpr std::string_view kSkipTooLong = "too_long";
inline constexpr std::string_view kSkipUnreadable = "unreadable";  // a file (counted once)
inline constexpr std::string_view kSkipSeriesLimit = "series_limit";

// The upper bounds (seconds) of hangwatch_pass_duration_seconds: finer below a frame, then the
// thresholds people alert on (16 ms, 33 ms: one and two 60 Hz frames; 50, 100, 250, 500 ms,
// 1, 2, 5 s).
const std::vector<double>& PassDurationBuckets();

struct HangMetricsOptions {
  // > 0: hangwatch_hangs_total and hangwatch_hang_seconds_total get a `culprit` label for the
  // culprits that are among the N with the most hangs when their hang is counted; the others
  // read "other". At most 2 * N culprits ever get a series of their own.
  size_t culprit_top = 0;
  // > 0: hangwatch_hangs_total and hangwatch_hang_seconds_total get a `context` label (what
  // the pass was serving: ContextLabel) for the contexts among the N with the most hangs when
  // their hang is counted; the others read "other", a hang without context "none". At most
  // 2 * N contexts ever get a series of their own; culprit_top's rule, for contexts. A record
  // label named context then becomes label_context on every series.
  size_t context_top = 0;
  // The first max_roles thread roles other than main (in the order their records come) get a
  // `role` value of their own, later ones read "other" (under the preload shim a role is a
  // thread's name, and HANGWATCH_THREADS=loops may watch many).
  size_t max_roles = 16;
  size_t max_label_sets = 10000;
};

class HangMetrics {
 public:
  HangMetrics(prometheus::Registry& registry, HangMetricsOptions options);

  // One hang record, of its thread_role; `cause`: its cause.kind ("" when the record has none:
  // "unknown").
  void AddHang(const HangRecord& hang, std::string_view cause);
  // One lag record's interval [start, end) and passes, of the thread role `role` ("" or "main":
  // the main thread).
  // `delay`: the record's queued + running histogram (report::DelayOf), nullptr: `passes`.
  void AddLag(const std::string& process, const std::string& host,
              const std::map<std::string, std::string>& labels, int64_t start_unix_ms,
              int64_t end_unix_ms, const PassHistogram& passes, std::string_view role = {},
              const PassHistogram* delay = nullptr);
  void Skip(std::string_view reason, double count = 1);

 private:
  // process, host, the record's labels, as Prometheus label names allow, and `role` for a
  // thread role other than main (a record label named role then becomes label_role); false
  // when the label set is new and the limit is reached. A new label set gets its series at 0
  // (every class with cause "unknown"), so that rate() sees its first hang as an increase.
  bool LabelsOf(const std::string& process, const std::string& host,
                const std::map<std::string, std::string>& labels, std::string_view role,
                prometheus::Labels* out);
  std::string CulpritLabel(const HangRecord& hang);
  // The `context` value of a hang: its ContextLabel, "none", or "other" (context_top).
  std::string ContextLabelOf(const HangRecord& hang);
  // The `role` value of a thread role other than main: itself, or "other" past max_roles.
  std::string RoleLabel(std::string_view role);

  std::mutex mu_;  // label_sets_, culprit_hangs_, culprit_series_, roles_
  HangMetricsOptions options_;
  prometheus::Family<prometheus::Counter>& hangs_;
  prometheus::Family<prometheus::Counter>& hang_seconds_;
  prometheus::Family<prometheus::Counter>& fatal_hangs_;
  prometheus::Family<prometheus::Counter>& perceived_hangs_;
  prometheus::Family<prometheus::Histogram>& input_delay_;
  prometheus::Family<prometheus::Histogram>& pass_duration_;
  prometheus::Family<prometheus::Histogram>& pass_delay_;
  prometheus::Family<prometheus::Counter>& passes_;
  prometheus::Family<prometheus::Counter>& busy_seconds_;
  prometheus::Family<prometheus::Counter>& watched_seconds_;
  prometheus::Family<prometheus::Counter>& skipped_;
  std::set<prometheus::Labels> label_sets_;
  std::map<std::string, size_t> culprit_hangs_;  // hangs per culprit name
  std::set<std::string> culprit_series_;         // culprits with a series of their own
  std::map<std::string, size_t> context_hangs_;  // hangs per context
  std::set<std::string> context_series_;         // contexts with a series of their own
  std::set<std::string, std::less<>> roles_;     // roles with a `role` value of their own
  // The series a hang adds to, by its key (process, host, role, labels, class, cause, culprit,
  // context:
  // the record's values, not the label maps built from them). Bounded as the label sets are.
  struct HangSeries {
    prometheus::Counter* hangs = nullptr;
    prometheus::Counter* seconds = nullptr;
    prometheus::Counter* fatal = nullptr;
    prometheus::Counter* perceived = nullptr;      // the hangs' labels without `context`
    prometheus::Histogram* input_delay = nullptr;  // the label set's alone
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  std::unordered_map<std::string, HangSeries, KeyHash, std::equal_to<>> hang_series_;
  std::string key_;  // reused: no allocation per hang once it is long enough
};

// A record's label key as a Prometheus label name: characters outside [A-Za-z0-9_] become '_',
// a leading digit or "__" gets a "_"/"label" prefix, and the names the exporter sets itself
// (process, host, class, cause, culprit, le, reason) become "label_NAME". `role` is not among
// them: `hangwatch exporter` (tools/exporter/record_counter.h) passes its role label through
// this function; HangMetrics moves a record label named role to label_role on the series of a
// thread other than main (as the exporter does), and leaves the main thread's as they were.
std::string LabelName(std::string_view key);

// A cause.kind as a label value: short lowercase identifiers only, else "unknown".
std::string CauseLabel(std::string_view kind);

// What a hang's pass was serving, as `hangwatch top --by context` groups it
// (report::ContextKey, restated: this adapter sees the public API only): the innermost label,
// else the source, else the trigger's kind; "" for a hang without context.
std::string ContextLabel(const Context& context);

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_PROMETHEUS_METRICS_H_
