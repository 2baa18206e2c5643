#include "agent/samplers/python_stacks.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "hang/model/runtime_frame_word.h"
#include "hangwatch/hang_record.h"
#include "python/code_resolver.h"
#include "python/debug_offsets.h"
#include "symbols/process_modules.h"
#include "unwind/capture_hook.h"
#include "unwind/self_memory.h"

namespace hangwatch::agent {
namespace {

// The hook's bounds: every frame max_frames may ask for (Config::max_frames <= 1024), and the
// innermost 64 KiB of the data stack chunk (3.11's first chunk is 16 KiB).
constexpr size_t kHookFrames = 1024;
constexpr size_t kHookCopyBytes = 64 * 1024;
// Names longer than these are cut: the cache's budget is per entry too.
constexpr size_t kMaxSymbol = 256;
constexpr size_t kMaxFile = 512;
// Room for the fields of a code object the watchdog checks (type, co_filename, the name,
// co_firstlineno: 128 bytes on 3.11).
constexpr size_t kCodeHeaderBytes = 256;
// Captures without a Python frame after which the thread state is looked for again.
constexpr uint64_t kRefindEvery = 8;

// The process's one hook: made at the first Create() that finds CPython, installed once the
// watched thread is found, never freed (a capture may run it until the samplers are gone, and
// the interpreter of a process does not change).
python::PythonCaptureHook* ProcessHook(const python::PythonLayout& layout) {
  static python::PythonCaptureHook* hook =
      new python::PythonCaptureHook(layout, kHookFrames, kHookCopyBytes);
  return hook;
}

}  // namespace

std::unique_ptr<PythonStacks> PythonStacks::Create(size_t max_frames, std::string* note) {
  if (const char* v = std::getenv("HANGWATCH_PYTHON"); v != nullptr && std::strcmp(v, "0") == 0) {
    return nullptr;
  }
  // Not Python: one dynamic-symbol lookup, nothing more.
  if (dlsym(RTLD_DEFAULT, "_PyRuntime") == nullptr) return nullptr;
  // Every read of the interpreter is a read of this process's own memory that cannot fault
  // (unwind/self_memory.h): process_vm_readv, or /proc/self/mem where that call is refused (a
  // seccomp filter; qemu-user, which does not implement it). Where neither works there can be
  // no Python frames, and one line must say so rather than the layout check retrying in silence.
  if (unwind::PrepareSelfMemory() == unwind::SelfMemoryMethod::kNone) {
    *note = std::string(
                "no Python frames: this process can read its own memory neither with "
                "process_vm_readv nor from /proc/self/mem (") +
            std::strerror(errno) + ")";
    return nullptr;
  }
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(getpid());
  if (!modules.ok()) return nullptr;
  const python::SelfMemoryReader self;
  absl::StatusOr<python::InterpreterAddresses> addresses =
      python::LocateInterpreter(*modules, self);
  if (!addresses.ok()) return nullptr;
  // 3.10-3.12: the table; 3.13: the interpreter's own _Py_DebugOffsets, which _PyRuntime holds
  // from its static initializer on, before Python is initialized.
  python::PythonLayout layout;
  if (std::string no_layout = python::LayoutForInterpreter(self, *addresses, &layout);
      !no_layout.empty()) {
    *note = "no Python frames: python3." + std::to_string(addresses->minor) + ": " + no_layout;
    return nullptr;
  }
  return std::unique_ptr<PythonStacks>(new PythonStacks(*addresses, layout, max_frames));
}

PythonStacks::PythonStacks(const python::InterpreterAddresses& addresses,
                           const python::PythonLayout& layout, size_t max_frames)
    : addresses_(addresses),
      layout_(layout),
      chain_(self_, layout_, addresses_),
      max_frames_(std::clamp<size_t>(max_frames, 1, kHookFrames)),
      hook_(ProcessHook(layout)),
      frames_(new python::PythonFrame[max_frames_]),
      identities_(new uint64_t[max_frames_]),
      headers_(new unsigned char[max_frames_ * kCodeHeaderBytes]),
      local_(new iovec[max_frames_]),
      remote_(new iovec[max_frames_]),
      marks_(new python::NativeMark[max_frames_]),
      placed_(new python::PlacedFrame[2 * max_frames_]),
      merged_(new uintptr_t[2 * max_frames_]),
      merged_tags_(new uint8_t[2 * max_frames_]) {
  names_.reserve(kMaxNames);
}

PythonStacks::~PythonStacks() {
  // The hook stays installed only while someone merges its words.
  if (unwind::CurrentCaptureHook() == hook_) {
    hook_->Watch(0, 0);
    unwind::SetCaptureHook(nullptr);
  }
}

void PythonStacks::Watch(const unwind::ThreadInfo& thread) {
  if (thread.tid == target_.tid) return;
  // Another watched thread's capture comes next (hangwatch/threads.h): the hook records that
  // thread's chain, found by its thread state (0 when it runs no Python: nothing recorded).
  target_ = thread;
  empty_captures_ = 0;
  if (state_ == State::kActive) {
    hook_->Watch(target_.tid,
                 chain_.FindThreadState(target_.tid, static_cast<uint64_t>(target_.handle)));
  }
}

void PythonStacks::TryActivate() {
  uint64_t interp = 0;
  // Not initialized yet (the shim starts the agent before Python does): again next sample.
  if (!self_.ReadWord(addresses_.runtime + layout_.runtime_interpreters_head, &interp) ||
      interp == 0) {
    return;
  }
  // 3.10 matches the thread by its pthread_t (glibc: an unsigned long).
  const uint64_t tstate =
      chain_.FindThreadState(target_.tid, static_cast<uint64_t>(target_.handle));
  if (tstate == 0) return;  // this thread has no thread state (yet)
  if (const std::string failed = chain_.CheckLayout(); !failed.empty()) {
    state_ = State::kOff;
    if (note_) {
      note_("no Python frames: python3." + std::to_string(addresses_.minor) + " (" +
            addresses_.module_path + "): the frame layout check failed (" + failed + ")");
    }
    return;
  }
  hook_->Watch(target_.tid, tstate);
  unwind::SetCaptureHook(hook_);
  state_ = State::kActive;
}

void PythonStacks::BeforeCapture() {
  if (state_ == State::kUnchecked) TryActivate();
}

size_t PythonStacks::Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) {
  if (state_ != State::kActive) return n;
  python::ChainEnd end = python::ChainEnd::kComplete;
  const size_t read =
      python::DecodeCaptureWords(buf->extra(), buf->num_extra, frames_.get(), max_frames_, &end);
  // The capture checked nothing: a frame whose code is not a code object (a frame freed or
  // reused under the reader) ends the chain here.
  const size_t count = CheckCodes(read);
  // Read only in part: its outermost frame read is tagged so (Stack::partial).
  const bool partial = end != python::ChainEnd::kComplete || count < read;
  if (count == 0) {
    // No Python frame, again and again: the thread state may have changed (the interpreter
    // finalized and initialized anew); look for the thread's again, now and then.
    if (++empty_captures_ % kRefindEvery == 0) {
      const uint64_t tstate =
          chain_.FindThreadState(target_.tid, static_cast<uint64_t>(target_.handle));
      hook_->Watch(target_.tid, tstate);
    }
    return n;
  }
  empty_captures_ = 0;
  n = std::min(n, max_frames_);
  uintptr_t* frames = buf->frame_storage();
  for (size_t i = 0; i < n; ++i) {
    const bool is_pc = i == 0 && tags[0] == static_cast<uint8_t>(FrameMethod::kPc);
    marks_[i] = python::InEvalLoop(frames[i], is_pc, addresses_.eval_lo, addresses_.eval_hi)
                    ? python::NativeMark::kEvalLoop
                    : python::NativeMark::kOther;
  }
  const python::Placement placement = python::PlacePythonFrames(
      marks_.get(), n, frames_.get(), count, placed_.get(), 2 * max_frames_);
  const size_t out = std::min(placement.size, buf->max_frames());
  size_t outermost_python = out;
  for (size_t i = 0; i < out; ++i) {
    const python::PlacedFrame& p = placed_[i];
    if (p.python) {
      const python::PythonFrame& f = frames_[p.index];
      merged_[i] = RuntimeFrameWord(f.code, f.instr);
      merged_tags_[i] = kPythonFrameTag;
      Name(merged_[i], f, identities_[p.index]);
      if (outermost_python == out || p.index > placed_[outermost_python].index) {
        outermost_python = i;
      }
    } else {
      merged_[i] = frames[p.index];
      merged_tags_[i] = tags[p.index];
    }
  }
  if (partial && outermost_python != out) merged_tags_[outermost_python] = kPythonPartialTag;
  std::copy_n(merged_.get(), out, frames);
  std::copy_n(merged_tags_.get(), out, tags);
  buf->num_frames = out;
  return out;
}

size_t PythonStacks::CheckCodes(size_t count) {
  const uint32_t name =
      layout_.code_qualname != python::kNoField ? layout_.code_qualname : layout_.code_name;
  const uint32_t lo =
      std::min({layout_.object_type, layout_.code_filename, name, layout_.code_firstlineno});
  const uint32_t hi = std::max(
      {layout_.object_type + 8, layout_.code_filename + 8, name + 8, layout_.code_firstlineno + 4});
  const size_t size = hi - lo;
  if (size > kCodeHeaderBytes) return 0;
  size_t asked = 0;
  for (; asked < count && asked < IOV_MAX && frames_[asked].code != 0; ++asked) {
    local_[asked] = iovec{headers_.get() + asked * kCodeHeaderBytes, size};
    remote_[asked] =
        iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(frames_[asked].code + lo)), size};
  }
  if (asked == 0) return 0;
  // The kernel stops at the first range it cannot read: the frames before it are checked.
  const ssize_t got = unwind::ReadSelfV(local_.get(), asked, remote_.get(), asked);
  const size_t readable = got > 0 ? static_cast<size_t>(got) / size : 0;
  for (size_t i = 0; i < readable; ++i) {
    const unsigned char* bytes = headers_.get() + i * kCodeHeaderBytes;
    uint64_t type = 0, filename = 0, name_object = 0;
    int32_t first_line = 0;
    std::memcpy(&type, bytes + (layout_.object_type - lo), 8);
    std::memcpy(&filename, bytes + (layout_.code_filename - lo), 8);
    std::memcpy(&name_object, bytes + (name - lo), 8);
    std::memcpy(&first_line, bytes + (layout_.code_firstlineno - lo), 4);
    if (type != addresses_.code_type) return i;
    // Not a hash table's hash: two different code objects at one address must differ here.
    identities_[i] = (filename * 0x9e3779b97f4a7c15ull) ^ (name_object + 0x632be59bd9b4e019ull) ^
                     static_cast<uint64_t>(static_cast<uint32_t>(first_line)) << 17;
  }
  return readable;
}

void PythonStacks::Name(uintptr_t word, const python::PythonFrame& frame, uint64_t identity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = names_.find(word);
    if (it != names_.end() ? it->second.identity == identity : names_.size() >= kMaxNames) {
      return;
    }
  }
  // A resolver of its own each time: CodeResolver caches by address, which the identity check
  // above must be able to overrule. Reads the code object, its strings and line table once.
  python::CodeResolver resolver(self_, layout_, addresses_);
  const python::CodeInfo* info = resolver.Code(frame.code);
  if (info == nullptr) return;
  Named named;
  named.identity = identity;
  named.name.symbol = info->name.substr(0, kMaxSymbol);
  named.name.file = info->file.substr(0, kMaxFile);
  named.name.line = std::max(resolver.Line(*info, frame.instr), 0);
  std::lock_guard<std::mutex> lock(mu_);
  names_[word] = std::move(named);
}

bool PythonStacks::Find(uintptr_t word, RuntimeFrameName* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(word);
  if (it == names_.end()) return false;
  *out = it->second.name;
  return true;
}

}  // namespace hangwatch::agent
