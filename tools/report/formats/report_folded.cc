// FormatFolded: every sample of every hang as one "outer;...;inner count" line per unique stack
// (flamegraph.pl, speedscope, inferno).
#include "tools/report/formats/report_folded.h"

#include <map>
#include <string>
#include <vector>

#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

// Folded-stack names may not contain ';' (the separator) or newlines.
std::string FoldedName(const Frame& f) {
  std::string s = FrameName(f);
  for (char& c : s) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

std::map<std::vector<std::string>, uint64_t> FoldStacks(const Report& report) {
  std::map<std::vector<std::string>, uint64_t> folded;
  for (const HangRecord& h : report.hangs) {
    for (const Stack& s : h.stacks) {
      if (s.count == 0 || s.frames.empty()) continue;
      std::vector<std::string> path;
      for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it)
        path.push_back(FoldedName(*it));
      folded[path] += s.count;
    }
  }
  return folded;
}

std::string FormatFolded(const Report& report) {
  std::string out;
  for (const auto& [path, count] : FoldStacks(report)) {
    for (size_t i = 0; i < path.size(); ++i) {
      if (i) out.push_back(';');
      out += path[i];
    }
    out += " " + std::to_string(count) + "\n";
  }
  return out;
}

}  // namespace hangwatch::tools
