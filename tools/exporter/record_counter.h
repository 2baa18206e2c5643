// One line of a report into the exporter's metrics. Lines are classified by the format's reading
// rules with `top`'s line parser (tools/top/top_scan.h: report/record_scan.h over the top-level
// fields, the stacks, timeline and modules skipped, not decoded: what lets the exporter follow
// 100 MB/s on one core); hangs are counted from those fields, lag records (a few per process a
// minute) decoded in full by report/'s decoder for their buckets, and everything else counted as
// skipped with its reason. Apart from the command so that tests feed it lines directly.
#ifndef HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
#define HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "hangwatch/hang_record.h"
#include "hangwatch_prometheus_metrics.h"
#include "tools/reader/report_follower.h"
#include "tools/top/top_scan.h"

namespace hangwatch::tools {

// The thread role of a record (hangwatch/threads.h) is its series' `role` label, absent for the
// main thread (so that a main-thread-only report's series are what they were; PromQL matches
// them with role=""). Bounded: the first `max_roles` roles other than main get a value of their
// own, later ones read "other" (under the shim a role is a thread's name: `loops` may see many).
// A record label named "role" (HANGWATCH_LABELS) becomes "label_role" beside it.
inline constexpr size_t kDefaultMaxRoles = 16;

class RecordCounter {
 public:
  explicit RecordCounter(HangMetrics* metrics, size_t max_roles = kDefaultMaxRoles);

  // Counts one line (without its '\n').
  void Count(std::string_view line);

 private:
  // Adds the `role` label of `role` to *labels (nothing for the main thread).
  void AddRoleLabel(std::string_view role, std::map<std::string, std::string>* labels);

  TopLineParser parser_;
  HangMetrics* metrics_;
  size_t max_roles_;
  std::set<std::string, std::less<>> roles_;  // the roles with a label value of their own
  HangRecord hang_;                           // reused: its strings keep their capacity
};

// The metrics' skip reason (hangwatch_prometheus_metrics.h's kSkip*) of what the follower said
// of a file or line.
std::string_view SkipReason(ReportFollower::Event event);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
