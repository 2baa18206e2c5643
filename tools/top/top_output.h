// The output of `hangwatch top`: a text table, or a JSON array of groups (docs in
// tools/top/top_command.cc's --help and tools/README.md).
#ifndef HANGWATCH_TOOLS_TOP_OUTPUT_H_
#define HANGWATCH_TOOLS_TOP_OUTPUT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "tools/top/top_group.h"

namespace hangwatch::tools {

struct TopTextOptions {
  TopBy by = TopBy::kSignature;
  size_t limit = 0;                               // rows; 0: all
  uint64_t hangs = 0;                             // hangs counted
  size_t files = 0;                               // files read
  std::string by_label;                           // TopBy::kLabel: the label's name
  uint64_t hosts_total = 0, processes_total = 0;  // of every record read (hangs and lag)
  uint64_t watched_ms = 0;                        // the lag records' intervals
  // The longest queued + running pass of the main thread's lag records and the passes that had
  // a known wait: a line when some had.
  double delay_max_ms = 0;
  uint64_t queued_passes = 0;
};

// One line of totals, then a table: one row per group, most hangs first (or as sorted), with
// count, hosts and processes touched (of all those read: "3/40"), duration p50/p95/max/total,
// hang seconds per watched hour, busy/blocked split, the culprit with file:line, and the
// group's key.
std::string FormatTopText(const std::vector<TopGroup>& groups, const TopTextOptions& options);

// "1.2s", "412ms", "3m12s", "2h05m".
std::string FormatTopDuration(uint64_t ms);

// [{"key":..., "count":..., "hosts":N, "processes":N, ...}, ...] (one line, then "\n").
// "hang_seconds_per_hour": null without lag records. `by_label`: TopBy::kLabel's label.
std::string FormatTopJson(const std::vector<TopGroup>& groups, TopBy by, size_t limit,
                          const std::string& by_label = "");

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_OUTPUT_H_
