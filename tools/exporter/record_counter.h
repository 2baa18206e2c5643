// One line of a report into the exporter's metrics: decoded by report/'s decoder (the format's
// reading rules), hangs and lag records counted, everything else counted as skipped with its
// reason. Apart from the command so that tests feed it lines directly.
#ifndef HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
#define HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_

#include <string>
#include <string_view>

#include "hangwatch_prometheus_metrics.h"

namespace hangwatch::tools {

// Counts one line (without its '\n').
void CountLine(std::string_view line, HangMetrics* metrics);

// A hang line's "cause"."kind" (docs/report-format.md), "" when it has none.
std::string CauseKindOf(std::string_view line);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_RECORD_COUNTER_H_
