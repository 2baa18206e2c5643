#include "tools/reader/report_symbolize.h"

#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "symbols/batch_symbolizer.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/report_frames.h"

namespace hangwatch::tools {
namespace {

using ModuleKey = std::pair<std::string, std::string>;  // build-id, path

bool Symbolizable(const Frame& f) { return !f.module.empty() && f.module[0] == '/'; }

}  // namespace

void SymbolizeReport(const ReportSymbolizeOptions& options, Report* report,
                     std::vector<std::string>* warnings) {
  // The modules in (build-id, path) order, which is the order their batches run in.
  std::map<ModuleKey, size_t> ids;
  for (const HangRecord& h : report->hangs) {
    for (const Stack& s : h.stacks) {
      for (const Frame& f : s.frames) {
        if (Symbolizable(f)) ids.emplace(ModuleKey{f.build_id, f.module}, 0);  // not [vdso]
      }
    }
  }
  if (ids.empty()) return;

  symbols::BatchSymbolizer batch({options.symbolizer, /*by_build_id=*/true});
  std::vector<const ModuleKey*> keys;
  for (auto& [key, id] : ids) {
    id = batch.AddModule(key.first, key.second);
    keys.push_back(&key);
  }
  for (const HangRecord& h : report->hangs) {
    for (const Stack& s : h.stacks) {
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const Frame& f = s.frames[i];
        if (Symbolizable(f)) batch.AddFrame(ids.at({f.build_id, f.module}), f.offset, i);
      }
    }
  }

  std::set<std::string> said;
  auto warn = [&](const std::string& w) {
    if (said.insert(w).second) warnings->push_back(w);
  };
  batch.Run(
      [&](size_t done, size_t total, size_t module) {
        if (!options.progress) return;
        std::fprintf(stderr, "\rhangwatch %s: symbolizing %zu/%zu %-40.40s", options.command, done,
                     total, EscapeForTerminal(BaseName(keys[module]->second)).c_str());
        std::fflush(stderr);
      },
      [&](size_t, const absl::Status& status) { warn(std::string(status.message())); });
  if (options.progress) std::fprintf(stderr, "\r%80s\r", "");
  for (const std::string& w : batch.warnings()) warn(w);

  for (HangRecord& h : report->hangs) {
    for (Stack& s : h.stacks) {
      std::vector<Frame> frames;
      frames.reserve(s.frames.size());
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const Frame& f = s.frames[i];
        const symbols::SymbolizedAddress* answer =
            Symbolizable(f) ? batch.Answer(ids.at({f.build_id, f.module}), f.offset, i) : nullptr;
        const bool known =
            answer != nullptr && !answer->frames.empty() && !answer->frames.back().function.empty();
        if (!known) {
          frames.push_back(f);
          continue;
        }
        for (const symbols::SourceFrame& sf : answer->frames) {
          Frame g = f;
          if (!sf.function.empty()) g.symbol = std::string(sf.function);
          g.file = std::string(sf.file);
          g.line = static_cast<int>(sf.line);
          if (!g.file.empty()) report->dwarf_source_files.insert(g.file);
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
