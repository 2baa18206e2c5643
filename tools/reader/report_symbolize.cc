#include "tools/reader/report_symbolize.h"

#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "report/cause_text.h"
#include "report/names.h"
#include "report/stack_identity.h"
#include "symbols/batch_symbolizer.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/report_frames.h"
#include "tools/reader/report_jit_names.h"

namespace hangwatch::tools {
namespace {

using ModuleKey = std::pair<std::string, std::string>;  // build-id, path

// A native frame of a module file. Never a Python frame: its address is a code object's, in no
// module (and a Python frame that claims a module is not believed).
bool Symbolizable(const Frame& f) {
  return f.language == FrameLanguage::kNative && !f.module.empty() && f.module[0] == '/';
}

// Calls visit(frames) for every list of frames of a hang: its stacks, then the threads of its
// cause (a lock's owner, the chain, a deadlock's cycle).
template <typename H, typename F>
void ForEachFrameList(H& h, F&& visit) {
  for (auto& s : h.stacks) visit(s.frames);
  if (h.cause.has_owner) visit(h.cause.owner.frames);
  for (auto& t : h.cause.chain) visit(t.frames);
  for (auto& t : h.cause.cycle) visit(t.frames);
}

// A cause thread's culprit, again after its frames were symbolized, and the summary naming it.
void RefreshCauseCulprits(HangRecord* h) {
  if (h->cause.empty()) return;
  auto refresh = [](CauseThread& t) {
    Stack s;
    s.frames = t.frames;
    t.culprit = report::FindCulprit(s);
  };
  if (h->cause.has_owner) refresh(h->cause.owner);
  for (CauseThread& t : h->cause.chain) refresh(t);
  for (CauseThread& t : h->cause.cycle) refresh(t);
  h->cause.summary = report::DescribeCause(h->cause, h->duration_ms);
}

}  // namespace

void SymbolizeReport(const ReportSymbolizeOptions& options, Report* report,
                     std::vector<std::string>* warnings) {
  // JIT code first: a runtime that writes its perf map at exit left it after the records.
  NameJitFrames(report);
  // The modules in (build-id, path) order, which is the order their batches run in.
  std::map<ModuleKey, size_t> ids;
  for (const HangRecord& h : report->hangs) {
    ForEachFrameList(h, [&](const std::vector<Frame>& frames) {
      for (const Frame& f : frames) {
        if (Symbolizable(f)) ids.emplace(ModuleKey{f.build_id, f.module}, 0);  // not [vdso]
      }
    });
  }
  if (ids.empty()) return;

  symbols::BatchSymbolizer batch({options.symbolizer, /*by_build_id=*/true});
  std::vector<const ModuleKey*> keys;
  for (auto& [key, id] : ids) {
    id = batch.AddModule(key.first, key.second);
    keys.push_back(&key);
  }
  for (const HangRecord& h : report->hangs) {
    ForEachFrameList(h, [&](const std::vector<Frame>& frames) {
      for (size_t i = 0; i < frames.size(); ++i) {
        const Frame& f = frames[i];
        if (Symbolizable(f)) batch.AddFrame(ids.at({f.build_id, f.module}), f.offset, i);
      }
    });
  }

  std::set<std::string> said;
  auto warn = [&](const std::string& w) {
    if (said.insert(w).second) warnings->push_back(w);
  };
  batch.Run(
      [&](size_t done, size_t total, size_t module) {
        if (!options.progress) return;
        std::fprintf(stderr, "\rhangwatch %s: symbolizing %zu/%zu %-40.40s", options.command, done,
                     total,
                     EscapeForTerminal(report::ModuleFileName(keys[module]->second)).c_str());
        std::fflush(stderr);
      },
      [&](size_t, const absl::Status& status) { warn(std::string(status.message())); });
  if (options.progress) std::fprintf(stderr, "\r%80s\r", "");
  for (const std::string& w : batch.warnings()) warn(w);

  for (HangRecord& h : report->hangs) {
    ForEachFrameList(h, [&](std::vector<Frame>& stack_frames) {
      std::vector<Frame> frames;
      frames.reserve(stack_frames.size());
      for (size_t i = 0; i < stack_frames.size(); ++i) {
        const Frame& f = stack_frames[i];
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
      stack_frames = std::move(frames);
    });
    // Names, files and inlined frames may change which frame is the culprit, and give it a line.
    RefreshHangIdentity(&h);
    RefreshCauseCulprits(&h);
  }
}

}  // namespace hangwatch::tools
