// One line of a report into the exporter's metrics. Lines are classified by the format's reading
// rules with `top`'s line parser (tools/top/top_scan.h: report/record_scan.h over the top-level
// fields, the stacks, timeline and modules skipped, not decoded: what lets the exporter follow
// 100 MB/s on one core); hangs are counted from those fields, lag records (a few per process a
// minute) decoded in full by report/'s decoder for their buckets, and everything else counted as
// skipped with its reason. Apart from the command so that tests feed it lines directly.
#ifndef HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
#define HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_

#include <map>
#include <string>
#include <string_view>

#include "hangwatch/hang_record.h"
#include "hangwatch_prometheus_metrics.h"
#include "tools/reader/report_follower.h"
#include "tools/top/top_scan.h"

namespace hangwatch::tools {

// The thread role of a record (hangwatch/threads.h) is handed to the metrics, which make it the
// series' `role` label (HangMetricsOptions::max_roles bounds its values; none for main).
class RecordCounter {
 public:
  explicit RecordCounter(HangMetrics* metrics);

  // Counts one line (without its '\n').
  void Count(std::string_view line);

 private:
  TopLineParser parser_;
  HangMetrics* metrics_;
  HangRecord hang_;  // reused: its strings keep their capacity
};

// The metrics' skip reason (hangwatch_prometheus_metrics.h's kSkip*) of what the follower said
// of a file or line.
std::string_view SkipReason(ReportFollower::Event event);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
