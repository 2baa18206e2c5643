#include "tools/run/junit.h"

#include "report/names.h"
#include "report/stack_identity.h"

#include <cstdio>
#include <map>
#include <vector>

#include "tools/common/junit_writer.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {

std::string FormatJunit(const Report& report, const std::string& suite, double elapsed_s) {
  // Hangs by fingerprint, in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const HangRecord*>> groups;
  for (const HangRecord& h : report.hangs) {
    const std::string key = h.fingerprint.empty() ? "no-stack" : h.fingerprint;
    auto& g = groups[key];
    if (g.empty()) order.push_back(key);
    g.push_back(&h);
  }
  JunitSuites junit{"hangwatch", suite, elapsed_s, {}};
  if (order.empty()) {
    JunitCase& c = junit.cases.emplace_back();
    c.classname = "hangwatch";
    c.name = "main thread never stalled";
    c.seconds = elapsed_s;
    c.empty_element = true;
  }
  for (const std::string& key : order) {
    const auto& hangs = groups[key];
    const HangRecord* longest = hangs[0];
    uint64_t total_ms = 0;
    for (const HangRecord* h : hangs) {
      total_ms += h->duration_ms;
      if (h->duration_ms > longest->duration_ms) longest = h;
    }
    const Culprit c = HangCulprit(*longest);
    const std::string culprit =
        c.empty() ? "unknown" : CulpritLabel(c, CulpritLabelStyle::kFunction);
    const std::string location = CulpritLocation(c);
    const std::string where = location.empty() ? "" : " at " + location;
    const std::string process(report::ProcessName(longest->process_name, longest->process));
    Report one;
    one.hangs.push_back(*longest);
    char msg[512];
    std::snprintf(
        msg, sizeof msg,
        "main thread of %s stalled %zu time%s, longest %llu ms (%s, CPU %u%%) in %s%s",
        process.empty() ? "?" : process.c_str(), hangs.size(), hangs.size() == 1 ? "" : "s",
        static_cast<unsigned long long>(longest->duration_ms), HangClassName(longest->hang_class),
        longest->cpu_percent, culprit.c_str(), where.c_str());
    JunitCase& test = junit.cases.emplace_back();
    test.classname = "hangwatch." + (process.empty() ? "process" : process);
    test.name = "hang " + key + " in " + culprit;
    test.seconds = static_cast<double>(total_ms) / 1000.0;
    test.outcome = JunitCase::Outcome::kFailure;
    test.type = "hang";
    test.message = msg;
    test.body = FormatSummary(one, 32);
  }
  return FormatJunitXml(junit);
}

}  // namespace hangwatch::tools
