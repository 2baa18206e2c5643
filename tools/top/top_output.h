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
  size_t limit = 0;    // rows; 0: all
  uint64_t hangs = 0;  // hangs counted
  size_t files = 0;    // files read
};

// One line of totals, then a table: one row per group, most hangs first (or as sorted), with
// count, hosts, processes, duration p50/p95/max/total, busy/blocked split, the culprit with
// file:line, and the group's key.
std::string FormatTopText(const std::vector<TopGroup>& groups, const TopTextOptions& options);

// "1.2s", "412ms", "3m12s", "2h05m".
std::string FormatTopDuration(uint64_t ms);

// [{"key":..., "count":..., "hosts":N, "processes":N, ...}, ...] (one line, then "\n").
std::string FormatTopJson(const std::vector<TopGroup>& groups, TopBy by, size_t limit);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_OUTPUT_H_
