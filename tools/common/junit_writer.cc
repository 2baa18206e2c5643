#include "tools/common/junit_writer.h"

#include <cstdio>

#include "tools/common/xml_escape.h"

namespace hangwatch::tools {
namespace {

std::string Attr(const std::string& s) { return XmlEscape(s, true); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

}  // namespace

std::string FormatJunitXml(const JunitSuites& suites) {
  size_t failures = 0, errors = 0;
  for (const JunitCase& c : suites.cases) {
    failures += c.outcome == JunitCase::Outcome::kFailure;
    errors += c.outcome == JunitCase::Outcome::kError;
  }
  const std::string counts = "tests=\"" + std::to_string(suites.cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
                             "\"";
  const std::string time = Seconds(suites.seconds);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"" + Attr(suites.name) + "\" " + counts + " time=\"" + time + "\">\n";
  out += "  <testsuite name=\"" + Attr(suites.suite) + "\" " + counts + " skipped=\"0\" time=\"" +
         time + "\">\n";
  for (const JunitCase& c : suites.cases) {
    out += "    <testcase classname=\"" + Attr(c.classname) + "\" name=\"" + Attr(c.name) +
           "\" time=\"" + Seconds(c.seconds) + "\"";
    if (c.empty_element && c.outcome == JunitCase::Outcome::kPassed && c.out.empty()) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    if (c.outcome != JunitCase::Outcome::kPassed) {
      const char* element = c.outcome == JunitCase::Outcome::kFailure ? "failure" : "error";
      out += std::string("      <") + element + " type=\"" + Attr(c.type) + "\" message=\"" +
             Attr(c.message) + "\">" + XmlEscape(c.body, false) + "</" + element + ">\n";
    }
    if (!c.out.empty()) out += "      <system-out>" + XmlEscape(c.out, false) + "</system-out>\n";
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace hangwatch::tools
