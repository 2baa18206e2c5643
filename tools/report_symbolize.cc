#include "tools/report_symbolize.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "tools/report_frames.h"

namespace hangwatch::tools {
namespace {

// The address to look up: the interrupted instruction itself for frame 0, the call
// instruction (return address - 1) for the others.
uint64_t LookupAddress(const Frame& f, size_t index) {
  return index == 0 || f.offset == 0 ? f.offset : f.offset - 1;
}

using ModuleKey = std::pair<std::string, std::string>;  // build-id, path

}  // namespace

void SymbolizeReport(const ReportSymbolizeOptions& options, Report* report,
                     std::vector<std::string>* warnings) {
  // Every (module, address) once.
  std::map<ModuleKey, std::set<uint64_t>> wanted;
  for (const HangRecord& h : report->hangs) {
    for (const Stack& s : h.stacks) {
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const Frame& f = s.frames[i];
        if (f.module.empty() || f.module[0] != '/') continue;  // [vdso], unknown
        wanted[{f.build_id, f.module}].insert(LookupAddress(f, i));
      }
    }
  }
  if (wanted.empty()) return;

  symbols::OfflineSymbolizer symbolizer(options.symbolizer);
  std::map<std::pair<ModuleKey, uint64_t>, symbols::SymbolizedAddress> answers;
  size_t done = 0;
  std::set<std::string> said;
  for (const auto& [key, addrs] : wanted) {
    if (options.progress) {
      std::fprintf(stderr, "\rhangwatch report: symbolizing %zu/%zu %-40.40s", ++done,
                   wanted.size(), BaseName(key.second).c_str());
      std::fflush(stderr);
    }
    const std::vector<uint64_t> list(addrs.begin(), addrs.end());
    std::vector<symbols::SymbolizedAddress> out;
    const absl::Status status =
        key.first.empty() ? symbolizer.SymbolizeFile(key.second, list, &out)
                          : symbolizer.SymbolizeBuildId(key.first, key.second, list, &out);
    if (!status.ok()) {
      const std::string w = std::string(status.message());
      if (said.insert(w).second) warnings->push_back(w);
      continue;
    }
    for (size_t i = 0; i < list.size() && i < out.size(); ++i) {
      answers[{key, list[i]}] = std::move(out[i]);
    }
  }
  if (options.progress) std::fprintf(stderr, "\r%80s\r", "");
  for (const std::string& w : symbolizer.warnings()) {
    if (said.insert(w).second) warnings->push_back(w);
  }

  for (HangRecord& h : report->hangs) {
    for (Stack& s : h.stacks) {
      std::vector<Frame> frames;
      frames.reserve(s.frames.size());
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const Frame& f = s.frames[i];
        auto it = answers.find({{f.build_id, f.module}, LookupAddress(f, i)});
        const bool known = it != answers.end() && !it->second.frames.empty() &&
                           !it->second.frames.back().function.empty();
        if (!known) {
          frames.push_back(f);
          continue;
        }
        for (const symbols::SourceFrame& sf : it->second.frames) {
          Frame g = f;
          if (!sf.function.empty()) g.symbol = std::string(sf.function);
          g.file = std::string(sf.file);
          g.line = static_cast<int>(sf.line);
          frames.push_back(std::move(g));
        }
      }
      s.frames = std::move(frames);
    }
    // Names, files and inlined frames may change which frame is the culprit, and give it a line.
    RefreshHangIdentity(&h);
  }
}

}  // namespace hangwatch::tools
