// The one writer of JUnit XML (tests/tools/junit.xsd) for every producer: `hangwatch run`'s
// hangs (tools/run/junit.h), the gate's verdict (tools/gate/gate_output.h) and the error of a
// run that could not gate (tools/run/run_summary.h). They say what the test cases are; this
// writes them, escaped, with the counts and times CI systems read.
#ifndef HANGWATCH_TOOLS_COMMON_JUNIT_WRITER_H_
#define HANGWATCH_TOOLS_COMMON_JUNIT_WRITER_H_

#include <string>
#include <vector>

namespace hangwatch::tools {

struct JunitCase {
  enum class Outcome { kPassed, kFailure, kError };
  std::string classname, name;
  double seconds = 0;
  Outcome outcome = Outcome::kPassed;
  // A failure's or an error's type, message (attribute) and body (text).
  std::string type, message, body;
  std::string out;  // <system-out>, when not empty
  // With neither a failure, an error nor output: written as one empty element, <testcase .../>.
  bool empty_element = false;
};

struct JunitSuites {
  std::string name;   // of <testsuites>
  std::string suite;  // of the one <testsuite> (e.g. the command that ran)
  double seconds = 0;
  std::vector<JunitCase> cases;
};

// The XML document: one <testsuites> holding one <testsuite>; times in seconds with three
// decimals (negative ones as 0).
std::string FormatJunitXml(const JunitSuites& suites);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMON_JUNIT_WRITER_H_
