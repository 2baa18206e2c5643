// The culprits `hangwatch top` prints, symbolized offline as `hangwatch report` symbolizes them.
//
// The scan (top_scan.h) reads only the top-level fields of each hang, so a group's culprit is at
// first what the agent recorded: for a stripped binary, `module+0xoffset` without file:line.
// After grouping, the one line of each printed group that TopGroup::culprit_line points at is
// read again, decoded by the report decoder (report_reader.h) and put through the report's own
// symbolization (report_symbolize.h: the debug-file chain, debuginfod last, then the culprit
// recomputed from the symbolized stacks), so `top` names the same culprit, with the
// same file:line, as `hangwatch report` does for that hang.
#ifndef HANGWATCH_TOOLS_TOP_SYMBOLIZE_H_
#define HANGWATCH_TOOLS_TOP_SYMBOLIZE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/reader/report_symbolize.h"
#include "tools/top/top_group.h"

namespace hangwatch::tools {

// The line that starts at byte `offset` of `path`, without its newline (at most `max_bytes`).
// False when the file cannot be read there or the line is longer.
bool ReadLineAt(const std::string& path, uint64_t offset, std::string* line,
                size_t max_bytes = size_t{256} << 20);

// Replaces the culprit of each of the first `count` groups (all when count is 0 or larger) by
// the culprit `hangwatch report` finds for the hang at its culprit_line. `paths` are the files
// that were scanned (TopLineRef::file indexes them). Always, not only for culprits without
// file:line: report recomputes every culprit from the symbolized stack (an inlined function can
// make another frame the culprit), and top must agree with it. A group keeps its recorded
// culprit when its line cannot be read again or is no longer the hang it was (the file
// changed: *notes gets one line for it), when the report decoder rejects the line (as
// `hangwatch report` skips it), or when the hang has no stack to recompute it from.
// Symbolization warnings (missing binaries, rejected debug files) go to *warnings, once each.
void SymbolizeTopCulprits(const std::vector<std::string>& paths,
                          const ReportSymbolizeOptions& options, size_t count,
                          std::vector<TopGroup>* groups, std::vector<std::string>* notes,
                          std::vector<std::string>* warnings);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_SYMBOLIZE_H_
