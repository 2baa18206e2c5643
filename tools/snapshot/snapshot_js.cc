#include "tools/snapshot/snapshot_js.h"

#include <string_view>
#include <utility>

#include "js/frame_finder.h"

namespace hangwatch::tools {

SnapshotJs::SnapshotJs(pid_t pid, const symbols::ProcessModules& modules,
                       std::vector<std::string>* notes)
    : memory_(pid), modules_(modules.map) {
  absl::StatusOr<js::V8Metadata> metadata = js::LoadV8Metadata(modules, memory_);
  if (!metadata.ok()) {
    if (metadata.status().code() != absl::StatusCode::kNotFound) {
      notes->push_back("no JS frames: " + std::string(metadata.status().message()));
    }
    return;
  }
  metadata_ = std::make_unique<js::V8Metadata>(std::move(*metadata));
  heap_ = std::make_unique<js::HeapReader>(*metadata_, memory_);
  resolver_ = std::make_unique<js::FunctionResolver>(*heap_);
}

// As the agent's filter (js_stacks.cc): the builtins, their copy beside the JIT code, JIT code.
bool SnapshotJs::MayBeJsCode(const void* self, uintptr_t pc) {
  const SnapshotJs& s = *static_cast<const SnapshotJs*>(self);
  const js::V8Metadata& m = *s.metadata_;
  if (pc >= m.builtins_lo && pc < m.builtins_hi) return true;
  const symbols::ModuleAddress at = s.modules_->Find(pc);
  if (at.module == nullptr) return true;
  if (at.module->path != m.module_path) return false;
  return pc < m.text_lo || pc >= m.text_hi || m.builtins_hi == 0;
}

const SnapshotJs::Named* SnapshotJs::Name(uint64_t sfi, uint64_t bytecode_array, int64_t offset) {
  auto fn = functions_.find(sfi);
  if (fn == functions_.end()) {
    js::FunctionInfo info;
    if (!resolver_->Resolve(sfi, &info)) info = js::FunctionInfo{};  // script_object 0: none
    fn = functions_.emplace(sfi, std::move(info)).first;
  }
  const js::FunctionInfo& info = fn->second;
  if (info.script_object == 0) return nullptr;  // V8's own closures and built-ins
  const std::string key = std::to_string(sfi) + ":" + std::to_string(offset);
  if (auto it = names_.find(key); it != names_.end()) return &it->second;
  Named named;
  named.symbol = info.name;
  named.file = info.script;
  named.line = info.line;
  named.line_is_definition = info.line > 0;
  if (offset >= 0 && resolver_->IsBytecodeOf(sfi, bytecode_array)) {
    const int64_t position = resolver_->BytecodePosition(bytecode_array, offset);
    const int line = position >= 0 ? resolver_->LineOf(info.script_object, position) : 0;
    if (line > 0) {
      named.line = line;
      named.line_is_definition = false;
    }
  }
  return &names_.emplace(key, std::move(named)).first->second;
}

std::string SnapshotJs::Describe() const {
  return metadata_ != nullptr ? "V8 of " + metadata_->module_path : "";
}

void SnapshotJs::Merge(std::vector<OutThread>* threads) {
  if (!active()) return;
  for (OutThread& ot : *threads) {
    const size_t n = ot.frames.size();
    if (n < 2 || ot.thread == nullptr) continue;
    // One pc per distinct native frame (inlined entries share their address: the last of a
    // run is the real frame).
    std::vector<uintptr_t> pcs;
    std::vector<size_t> entry;  // pcs[i]'s last OutFrame
    for (size_t i = 0; i < n; ++i) {
      if (i + 1 < n && ot.frames[i].inlined) continue;
      pcs.push_back(ot.frames[i].addr);
      entry.push_back(i);
    }
    js::FrameFinder finder(*metadata_, memory_, pcs.size());
    finder.set_code_filter(&SnapshotJs::MayBeJsCode, this);
    std::vector<js::JsFrame> found(pcs.size());
    const size_t count = finder.Find(pcs.data(), pcs.size(), ot.thread->stack_view(), found.data());
    for (size_t i = 0; i < count; ++i) {
      const js::JsFrame& f = found[i];
      const Named* named = Name(f.sfi, f.bytecode_array, f.bytecode_offset);
      if (named == nullptr) continue;
      OutFrame& out = ot.frames[entry[f.index]];
      out = OutFrame{};
      out.addr = metadata_->Untag(f.sfi);
      out.symbol = named->symbol;
      out.file = named->file;
      out.line = named->line;
      out.line_is_definition = named->line_is_definition;
      out.method = "js";
      out.kind = "js";
    }
  }
}

}  // namespace hangwatch::tools
