// The folded stacks of a report, which `--format folded` prints and the SVG flame graph
// (report_svg.cc) is drawn from.
#ifndef HANGWATCH_TOOLS_REPORT_FORMATS_REPORT_FOLDED_H_
#define HANGWATCH_TOOLS_REPORT_FORMATS_REPORT_FOLDED_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// "outer;...;inner" -> samples, over all hangs. Names have no ';' (the separator; made ':') and
// no newlines (made spaces).
std::map<std::vector<std::string>, uint64_t> FoldStacks(const Report& report);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_FORMATS_REPORT_FOLDED_H_
