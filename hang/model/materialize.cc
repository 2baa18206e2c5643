#include "hang/model/materialize.h"

#include <cstring>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "hang/model/java_callers.h"
#include "hang/model/materialize_cause.h"
#include "hang/model/materialize_context.h"
#include "hang/model/process_name.h"
#include "hang/model/runtime_frame_word.h"
#include "report/frame_classifier.h"
#include "report/stack_identity.h"
#include "symbols/function_start.h"
#include "symbols/in_process_symbolizer.h"
#include "symbols/perf_map.h"
#include "unwind/proc_files.h"

namespace hangwatch::agent {
namespace {

// A frame's name and the start of its function (symbols/function_start.h), both from the
// module's own files: for a hang of this process as for one read back from another run
// (a process that died), so that the two are named and identified alike.
struct FrameName {
  std::string symbol;
  uint64_t function_start = 0;
};

FrameName NameFrame(uintptr_t addr, bool is_return_address, const symbols::Module& module,
                    uint64_t offset, const MaterializeOptions& options) {
  FrameName out;
  symbols::SymbolInfo info;
  const bool named = options.addresses_are_local
                         ? symbols::SymbolizeInProcess(addr, is_return_address, &info)
                         : symbols::SymbolizeModuleOffset(module, offset, is_return_address, &info);
  if (named) out.symbol = std::move(info.name);
  const uint64_t at = is_return_address && offset > 0 ? offset - 1 : offset;
  uint64_t start = 0;
  if (symbols::FunctionStartInModule(module, at, &start)) out.function_start = start;
  return out;
}

// An interpreter's frame of the stack table (runtime_frame_word.h): the runtime's object for the
// function, the instruction, the language its tag says, and the name resolved on the watchdog
// when there is one.
Frame RuntimeFrame(uintptr_t word, uint8_t tag, const RuntimeNames* names) {
  Frame fr;
  fr.language = RuntimeTagLanguage(tag);
  fr.addr = RuntimeWordKey(word);
  const int64_t instr = RuntimeWordInstr(word);
  fr.offset = instr > 0 ? static_cast<uint64_t>(instr) : 0;
  RuntimeFrameName name;
  if (names != nullptr && names->Find(word, &name) && name.language == fr.language) {
    fr.symbol = std::move(name.symbol);
    fr.file = std::move(name.file);
    fr.line = name.line;
    fr.line_is_definition = name.line_is_definition;
  }
  return fr;
}

// The summary's figures and the process's names, as the record has them.
void CopySummary(const HangData& hang, const MaterializeOptions& options, HangRecord* r) {
  const HangSummary& s = hang.summary;
  r->pid = s.pid;
  r->tid = s.tid;
  r->thread_role.assign(s.thread_role, strnlen(s.thread_role, sizeof s.thread_role));
  r->thread_name.assign(s.thread_name, strnlen(s.thread_name, sizeof s.thread_name));
  r->process = options.process;
  if (!options.process_name.empty()) {
    r->process_name = options.process_name;
  } else if (options.addresses_are_local) {
    r->process_name = ThisProcessName();
  } else {
    r->process_name = std::string(report::ModuleFileName(options.process));
  }
  r->host = options.host;
  r->labels = options.labels;
  r->hang_id = s.hang_id;
  r->start_unix_ms = s.start_unix_ms;
  r->duration_ms = s.duration_ns / 1'000'000;
  r->cpu_ms = s.cpu_known ? s.cpu_ns / 1'000'000 : 0;
  r->cpu_percent = hang.CpuPercent();
  r->hang_class = hang.Class();
  r->stopped_ms = s.stopped_ns / 1'000'000;
  r->phase = s.phase;
  r->threshold_ms = s.threshold_ms;
  r->sample_interval_ms = s.sample_interval_ms;
  r->samples = s.samples;
  r->failed_samples = s.failed_samples;
  r->dropped_stacks = s.dropped_stacks;
  r->fatal = s.fatal;
  r->timeline_truncated = s.timeline_truncated;
  r->monitor_pause_us = s.pause_ns / 1000;
}

// The stack table's ids in the record's order: count descending, then first seen.
std::vector<uint32_t> StackOrder(const StackTable& table) {
  std::vector<uint32_t> order(table.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto& ea = table.entry(a);
    const auto& eb = table.entry(b);
    if (ea.count != eb.count) {
      return ea.count > eb.count;
    }
    return ea.first_seen_ms < eb.first_seen_ms;
  });
  return order;
}

// Code outside every module is JIT code: named from the runtime's perf map, read up to date
// once (here, on the reporting thread; the map only grows). nullptr when no frame needs it.
symbols::PerfMap* PerfMapFor(const StackTable& table, const symbols::ModuleMap& map,
                             const MaterializeOptions& options) {
  if (!options.symbolize || !options.addresses_are_local) return nullptr;
  for (size_t id = 0; id < table.size(); ++id) {
    const uintptr_t* frames = table.frames(static_cast<uint32_t>(id));
    for (size_t f = 0; f < table.entry(static_cast<uint32_t>(id)).num_frames; ++f) {
      if (!IsRuntimeWord(frames[f]) && map.Find(frames[f]).module == nullptr) {
        symbols::PerfMap* perf_map = &symbols::PerfMapOfThisProcess();
        perf_map->Refresh();
        return perf_map;
      }
    }
  }
  return nullptr;
}

// One frame, resolved and symbolized (the main thread's stacks and the cause's threads), with
// the modules its frames were found in. Symbolizing is the expensive part: one lookup per
// distinct (address, is_return) pair.
class FrameResolver {
 public:
  FrameResolver(const symbols::ModuleMap& map, const MaterializeOptions& options,
                symbols::PerfMap* perf_map)
      : map_(map), options_(options), perf_map_(perf_map) {}

  Frame Resolve(uintptr_t addr, bool is_return, FrameMethod method) {
    Frame fr;
    fr.addr = addr;
    fr.method = method;
    const symbols::ModuleAddress where = map_.Find(addr);
    if (where.module != nullptr) {
      fr.module = where.module->path;
      fr.build_id = where.module->build_id;
      fr.offset = where.offset;
      modules_.emplace(where.module, 0);
    } else {
      fr.offset = addr;
    }
    if (!options_.symbolize) return fr;
    auto key = std::make_pair(addr, is_return);
    auto it = names_.find(key);
    if (it == names_.end()) {
      FrameName name;
      if (where.module != nullptr) {
        name = NameFrame(addr, is_return, *where.module, where.offset, options_);
      } else if (perf_map_ != nullptr) {
        perf_map_->Find(is_return ? addr - 1 : addr, &name.symbol);
      }
      it = names_.emplace(key, std::move(name)).first;
    }
    fr.symbol = it->second.symbol;
    fr.function_start = it->second.function_start;
    if (where.module == nullptr && !fr.symbol.empty() && line_tid_ != 0 &&
        options_.jit_lines != nullptr) {
      // JIT code named by the perf map: where the runtime last saw this thread in it.
      auto line = lines_.find(addr);
      if (line == lines_.end()) {
        std::pair<std::string, uint32_t> at{"", 0};
        if (!options_.jit_lines->FrameLine(line_tid_, fr.symbol, &at.first, &at.second)) {
          at = {"", 0};
        }
        line = lines_.emplace(addr, std::move(at)).first;
      }
      fr.file = line->second.first;
      fr.line = static_cast<int>(line->second.second);
    }
    return fr;
  }

  // The thread whose frames are resolved now, for the lines of its JIT frames
  // (MaterializeOptions::jit_lines); 0: none (a cause's other threads).
  void set_line_tid(int64_t tid) { line_tid_ = tid; }

  // The modules of every frame resolved, by path.
  std::vector<ModuleInfo> Modules() const {
    std::vector<ModuleInfo> out;
    for (const auto& [module, unused] : modules_) {
      (void)unused;
      out.push_back(ModuleInfo{module->path, module->load_bias, module->build_id});
    }
    std::sort(out.begin(), out.end(),
              [](const ModuleInfo& a, const ModuleInfo& b) { return a.path < b.path; });
    return out;
  }

 private:
  const symbols::ModuleMap& map_;
  const MaterializeOptions& options_;
  symbols::PerfMap* perf_map_;
  int64_t line_tid_ = 0;
  std::map<uintptr_t, std::pair<std::string, uint32_t>> lines_;  // by address, for line_tid_
  std::map<const symbols::Module*, size_t> modules_;
  std::map<std::pair<uintptr_t, bool>, FrameName> names_;
};

// Stack `id` of the table as the record has it. An interpreter frame's tag marks it
// (runtime_frame_word.h), and the outermost one of a chain read only in part makes the stack
// partial.
Stack MakeStack(const HangData& hang, uint32_t id, int index, const MaterializeOptions& options,
                FrameResolver* resolver) {
  const StackTable& table = hang.stacks();
  const auto& e = table.entry(id);
  Stack st;
  st.id = index;
  st.count = e.count;
  st.first_seen_ms = e.first_seen_ms;
  st.last_seen_ms = e.last_seen_ms;
  st.cpu_us = e.cpu_us;
  const uintptr_t* frames = table.frames(id);
  st.frames.reserve(e.num_frames);
  const uint8_t* tags = table.tags(id);
  for (size_t f = 0; f < e.num_frames; ++f) {
    if (IsRuntimeTag(tags[f]) && IsRuntimeWord(frames[f])) {
      st.frames.push_back(RuntimeFrame(frames[f], tags[f], options.runtime_names));
      st.partial = st.partial || IsRuntimePartialTag(tags[f]);
      continue;
    }
    st.frames.push_back(resolver->Resolve(frames[f], f > 0, hang.frame_method(id, f)));
  }
  return st;
}

// The dominant stack's fingerprint, the hang's culprit and signature (report/stack_identity.h).
void Identify(const StackTable& table, uint32_t dominant, const symbols::ModuleMap& map,
              symbols::PerfMap* perf_map, HangRecord* r) {
  // Frame 0 counts by its function (the leaf key), not the exact instruction.
  const auto& e = table.entry(dominant);
  const uintptr_t leaf = e.leaf_key != 0 ? e.leaf_key : table.frames(dominant)[0];
  const symbols::ModuleAddress where = map.Find(leaf);
  // An interpreted leaf (runtime_frame_word.h) has no module offset: its frames identify it.
  uint64_t leaf_offset = where.module != nullptr ? where.offset : IsRuntimeWord(leaf) ? 0 : leaf;
  uint64_t jit_offset = 0;
  if (where.module == nullptr && perf_map != nullptr &&
      perf_map->Find(leaf, nullptr, &jit_offset)) {
    leaf_offset = leaf - jit_offset;  // JIT code: the start of its function, from the perf map
  }
  r->fingerprint = report::Fingerprint(r->stacks[0], leaf_offset);
  r->culprit = report::HangCulprit(r->stacks);
  r->signature = report::HangSignature(r->stacks, r->culprit);
}

}  // namespace

std::string MainExecutablePath() {
  char buf[4096];
  const ssize_t n = unwind::ReadExePath(buf, sizeof(buf));
  if (n <= 0) {
    return "";
  }
  return std::string(buf, static_cast<size_t>(n));
}

HangRecord Materialize(const HangData& hang, const MaterializeOptions& options) {
  HangRecord r;
  CopySummary(hang, options, &r);
  const StackTable& table = hang.stacks();
  const symbols::ModuleMap empty_map({});
  const symbols::ModuleMap& map = options.modules ? *options.modules : empty_map;
  const std::vector<uint32_t> order = StackOrder(table);
  std::vector<int> new_id(table.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    new_id[order[i]] = static_cast<int>(i);
  }
  symbols::PerfMap* perf_map = PerfMapFor(table, map, options);
  FrameResolver resolver(map, options, perf_map);
  resolver.set_line_tid(hang.summary.tid);
  r.stacks.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    r.stacks.push_back(MakeStack(hang, order[i], static_cast<int>(i), options, &resolver));
  }
  std::vector<JavaStackFrame> java;
  if (options.jit_lines != nullptr && options.jit_lines->ThreadFrames(hang.summary.tid, &java)) {
    AddJavaFrames(java, &r.stacks);
  }
  r.dominant_stack = r.stacks.empty() ? -1 : 0;
  if (!order.empty() && !r.stacks[0].frames.empty()) {
    Identify(table, order[0], map, perf_map, &r);
  }
  r.timeline.reserve(hang.timeline_size());
  for (size_t i = 0; i < hang.timeline_size(); ++i) {
    TimelineEntry t = hang.timeline()[i];
    if (t.stack >= 0 && static_cast<size_t>(t.stack) < new_id.size()) {
      t.stack = new_id[static_cast<size_t>(t.stack)];
    } else {
      t.stack = -1;
    }
    r.timeline.push_back(t);
  }
  // The cause's threads are resolved with the same frames, before the module list is made
  // (without the hung thread's JIT lines: not theirs).
  resolver.set_line_tid(0);
  r.cause = MaterializeCause(hang, r, new_id,
                             [&resolver](uintptr_t addr, bool is_return, FrameMethod method) {
                               return resolver.Resolve(addr, is_return, method);
                             });
  MaterializeContext(
      hang.context,
      [&resolver](uintptr_t addr) { return resolver.Resolve(addr, false, FrameMethod::kUnknown); },
      &r);
  r.modules = resolver.Modules();
  return r;
}

}  // namespace hangwatch::agent
