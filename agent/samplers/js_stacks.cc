#include "agent/samplers/js_stacks.h"

#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "hang/model/runtime_frame_word.h"
#include "hangwatch/hang_record.h"
#include "symbols/process_modules.h"
#include "unwind/self_memory.h"

namespace hangwatch::agent {
namespace {

// The identity of a SharedFunctionInfo at an address: its name (or scope info) and script.
uint64_t Identity(uint64_t name_or_scope, uint64_t script) {
  return (name_or_scope * 0x9e3779b97f4a7c15ull) ^ (script + 0x632be59bd9b4e019ull);
}

}  // namespace

std::unique_ptr<JsStacks> JsStacks::Create(size_t max_frames, std::vector<std::string>* notes) {
  if (const char* v = std::getenv("HANGWATCH_JS"); v != nullptr && std::strcmp(v, "0") == 0) {
    return nullptr;
  }
  // Not V8 with its metadata: one dynamic-symbol lookup, nothing more.
  if (dlsym(RTLD_DEFAULT, js::kV8MetadataMarker) == nullptr) return nullptr;
  if (unwind::PrepareSelfMemory() == unwind::SelfMemoryMethod::kNone) {
    notes->push_back(std::string("no JS frames: this process can read its own memory neither "
                                 "with process_vm_readv nor from /proc/self/mem (") +
                     std::strerror(errno) + ")");
    return nullptr;
  }
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(getpid());
  if (!modules.ok()) return nullptr;
  const js::SelfMemoryReader self;
  absl::StatusOr<js::V8Metadata> metadata = js::LoadV8Metadata(*modules, self);
  if (!metadata.ok()) {
    notes->push_back("no JS frames: " + std::string(metadata.status().message()));
    return nullptr;
  }
  auto stacks = std::unique_ptr<JsStacks>(new JsStacks(*metadata, max_frames));
  stacks->modules_ = modules->map;
  return stacks;
}

JsStacks::JsStacks(const js::V8Metadata& metadata, size_t max_frames)
    : metadata_(metadata),
      heap_(metadata_, self_),
      resolver_(heap_),
      finder_(metadata_, self_, std::max<size_t>(max_frames, 1)),
      max_frames_(std::max<size_t>(max_frames, 1)),
      frames_(new js::JsFrame[max_frames_]) {
  finder_.set_code_filter(&JsStacks::MayBeJsCode, this);
  names_.reserve(kMaxNames);
}

bool JsStacks::MayBeJsCode(const void* self, uintptr_t pc) {
  const JsStacks& s = *static_cast<const JsStacks*>(self);
  const js::V8Metadata& m = s.metadata_;
  if (pc >= m.builtins_lo && pc < m.builtins_hi) return true;  // the embedded builtins
  const symbols::ModuleAddress at = s.modules_->Find(pc);
  if (at.module == nullptr) return true;  // JIT code: outside every module
  if (at.module->path != m.module_path) return false;
  // V8's module: its copy of the builtins mapped beside the JIT code (short builtin calls) lies
  // outside its own text; inside it, the builtins' range where the symbols tell it, else all of
  // it (a stripped static symbol table).
  return pc < m.text_lo || pc >= m.text_hi || m.builtins_hi == 0;
}

size_t JsStacks::Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) {
  n = std::min(n, buf->num_frames);
  const size_t found = finder_.Find(buf->frames(), n, buf->stack_view(), frames_.get());
  uintptr_t* frames = buf->frame_storage();
  for (size_t i = 0; i < found; ++i) {
    const js::JsFrame& f = frames_[i];
    const uintptr_t word = Name(f);
    if (word == 0) continue;  // not nameable: the native frame stays
    frames[f.index] = word;
    tags[f.index] = RuntimeFrameTag(FrameLanguage::kJs, /*partial=*/false);
  }
  return n;
}

uintptr_t JsStacks::Name(const js::JsFrame& f) {
  const uint64_t key = metadata_.Untag(f.sfi);
  const uint64_t identity = Identity(f.sfi_name_or_scope, f.sfi_script);
  const uintptr_t function_word = RuntimeFrameWord(key, -1);
  const uintptr_t offset_word =
      f.bytecode_offset >= 0 ? RuntimeFrameWord(key, f.bytecode_offset) : function_word;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = names_.find(offset_word);
    if (it != names_.end() && it->second.identity == identity) return offset_word;
  }
  // The function: its name, script and first line, once per SharedFunctionInfo and identity.
  auto fn = functions_.find(key);
  if (fn == functions_.end() || fn->second.identity != identity) {
    if (functions_.size() >= kMaxNames && fn == functions_.end()) functions_.clear();
    Function entry;
    entry.identity = identity;
    if (!resolver_.Resolve(f.sfi, &entry.info)) return 0;
    fn = functions_.insert_or_assign(key, std::move(entry)).first;
  }
  const js::FunctionInfo& info = fn->second.info;
  // V8's own closures (an await's resolve function, a built-in's JSFunction) have no script:
  // their native frame, named by its builtin's symbol, says more, and V8's stack traces leave
  // them out too.
  if (info.script_object == 0) return 0;
  Named named;
  named.identity = identity;
  named.name.language = FrameLanguage::kJs;
  named.name.symbol = info.name;
  named.name.file = info.script;
  uintptr_t word = function_word;
  named.name.line = info.line;
  named.name.line_is_definition = info.line > 0;  // no line: nothing to mark
  if (f.bytecode_offset >= 0 && info.script_object != 0 &&
      resolver_.IsBytecodeOf(f.sfi, f.bytecode_array)) {
    const int64_t position = resolver_.BytecodePosition(f.bytecode_array, f.bytecode_offset);
    const int line = position >= 0 ? resolver_.LineOf(info.script_object, position) : 0;
    if (line > 0) {
      word = offset_word;
      named.name.line = line;
      named.name.line_is_definition = false;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(word);
  if (it != names_.end() ? it->second.identity == identity : names_.size() >= kMaxNames) {
    // Named already, or the cache is full: a full cache leaves new words unnamed.
    return word;
  }
  names_[word] = std::move(named);
  return word;
}

bool JsStacks::Find(uintptr_t word, RuntimeFrameName* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(word);
  if (it == names_.end()) return false;
  *out = it->second.name;
  return true;
}

size_t JsStacks::cached_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.size();
}

size_t JsStacks::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = names_.bucket_count() * sizeof(void*);
  for (const auto& [word, named] : names_) {
    bytes += sizeof(word) + sizeof(named) + 2 * sizeof(void*) + named.name.symbol.capacity() +
             named.name.file.capacity();
  }
  bytes += functions_.bucket_count() * sizeof(void*);
  for (const auto& [key, fn] : functions_) {
    bytes += sizeof(key) + sizeof(fn) + 2 * sizeof(void*) + fn.info.name.capacity() +
             fn.info.script.capacity();
  }
  return bytes;
}

}  // namespace hangwatch::agent
