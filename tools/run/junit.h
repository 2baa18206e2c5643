// JUnit XML for CI systems: one <testcase> per hang fingerprint (the same stall seen several
// times is one failing test), or one passing <testcase> when the run had no hang.
#ifndef HANGWATCH_TOOLS_JUNIT_H_
#define HANGWATCH_TOOLS_JUNIT_H_

#include <string>

#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// `suite`: the testsuite name (e.g. the command that ran); `elapsed_s`: its run time.
std::string FormatJunit(const Report& report, const std::string& suite, double elapsed_s);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_JUNIT_H_
