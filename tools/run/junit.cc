#include "tools/run/junit.h"

#include "report/stack_identity.h"

#include <cstdio>
#include <map>
#include <vector>

#include "tools/common/xml_escape.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

std::string XmlAttr(const std::string& s) { return XmlEscape(s, true); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

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
  const size_t tests = order.empty() ? 1 : order.size();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"hangwatch\" tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(order.size()) + "\" errors=\"0\" time=\"" + Seconds(elapsed_s) + "\">\n";
  out += "  <testsuite name=\"" + XmlAttr(suite) + "\" tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(order.size()) + "\" errors=\"0\" skipped=\"0\" time=\"" +
         Seconds(elapsed_s) + "\">\n";
  if (order.empty()) {
    out += "    <testcase classname=\"hangwatch\" name=\"main thread never stalled\" time=\"" +
           Seconds(elapsed_s) + "\"/>\n";
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
    const std::string culprit = c.empty() ? "unknown" : report::CulpritName(c);
    const std::string where =
        c.file.empty() ? "" : " at " + c.file + (c.line > 0 ? ":" + std::to_string(c.line) : "");
    const std::string process =
        longest->process_name.empty() ? BaseName(longest->process) : longest->process_name;
    Report one;
    one.hangs.push_back(*longest);
    char msg[512];
    std::snprintf(
        msg, sizeof msg,
        "main thread of %s stalled %zu time%s, longest %llu ms (%s, CPU %u%%) in %s%s",
        process.empty() ? "?" : process.c_str(), hangs.size(), hangs.size() == 1 ? "" : "s",
        static_cast<unsigned long long>(longest->duration_ms), HangClassName(longest->hang_class),
        longest->cpu_percent, culprit.c_str(), where.c_str());
    out += "    <testcase classname=\"hangwatch." + XmlAttr(process.empty() ? "process" : process) +
           "\" name=\"hang " + XmlAttr(key) + " in " + XmlAttr(culprit) + "\" time=\"" +
           Seconds(static_cast<double>(total_ms) / 1000.0) + "\">\n";
    out += "      <failure type=\"hang\" message=\"" + XmlAttr(msg) + "\">" +
           XmlEscape(FormatSummary(one, 32), false) + "</failure>\n";
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace hangwatch::tools
