#include "agent/python_stacks.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "agent/python_frame_word.h"
#include "hangwatch/hang_record.h"
#include "symbols/process_modules.h"
#include "unwind/capture_hook.h"

namespace hangwatch::agent {
namespace {

// The hook's bounds: every frame max_frames may ask for (Config::max_frames <= 1024), and the
// innermost 64 KiB of the data stack chunk (3.11's first chunk is 16 KiB).
constexpr size_t kHookFrames = 1024;
constexpr size_t kHookCopyBytes = 64 * 1024;
// Names longer than these are cut: the cache's budget is per entry too.
constexpr size_t kMaxSymbol = 256;
constexpr size_t kMaxFile = 512;

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
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(getpid());
  if (!modules.ok()) return nullptr;
  const python::ProcessMemoryReader self(getpid());
  absl::StatusOr<python::InterpreterAddresses> addresses =
      python::LocateInterpreter(*modules, self);
  if (!addresses.ok()) return nullptr;
  const python::PythonLayout* layout = python::TableLayout(addresses->minor);
  if (layout == nullptr) {
    *note = "no Python frames: python3." + std::to_string(addresses->minor) +
            " has no frame layout (3.10-3.12 only)";
    return nullptr;
  }
  return std::unique_ptr<PythonStacks>(new PythonStacks(*addresses, *layout, max_frames));
}

PythonStacks::PythonStacks(const python::InterpreterAddresses& addresses,
                           const python::PythonLayout& layout, size_t max_frames)
    : addresses_(addresses),
      layout_(layout),
      self_(getpid()),
      chain_(self_, layout_, addresses_),
      resolver_(self_, layout_, addresses_),
      max_frames_(std::clamp<size_t>(max_frames, 1, kHookFrames)),
      hook_(ProcessHook(layout)),
      frames_(new python::PythonFrame[max_frames_]),
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

void PythonStacks::Watch(const unwind::ThreadInfo& thread) { target_ = thread; }

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
  size_t count =
      python::DecodeCaptureWords(buf->extra(), buf->num_extra, frames_.get(), max_frames_, &end);
  // The capture checked nothing: a frame whose code is not a code object (a frame freed or
  // reused under the reader) ends the chain here.
  for (size_t i = 0; i < count; ++i) {
    if (!chain_.IsCode(frames_[i].code)) {
      count = i;
      break;
    }
  }
  if (count == 0) return n;
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
  for (size_t i = 0; i < out; ++i) {
    const python::PlacedFrame& p = placed_[i];
    if (p.python) {
      const python::PythonFrame& f = frames_[p.index];
      merged_[i] = PythonFrameWord(f.code, f.instr);
      merged_tags_[i] = kPythonFrameTag;
      Name(merged_[i], f);
    } else {
      merged_[i] = frames[p.index];
      merged_tags_[i] = tags[p.index];
    }
  }
  std::copy_n(merged_.get(), out, frames);
  std::copy_n(merged_tags_.get(), out, tags);
  buf->num_frames = out;
  return out;
}

void PythonStacks::Name(uintptr_t word, const python::PythonFrame& frame) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (names_.size() >= kMaxNames || names_.count(word) != 0) return;
  }
  const python::CodeInfo* info = resolver_.Code(frame.code);
  if (info == nullptr) return;
  PythonName name;
  name.symbol = info->name.substr(0, kMaxSymbol);
  name.file = info->file.substr(0, kMaxFile);
  name.line = std::max(resolver_.Line(*info, frame.instr), 0);
  std::lock_guard<std::mutex> lock(mu_);
  names_.emplace(word, std::move(name));
}

bool PythonStacks::Find(uintptr_t word, PythonName* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(word);
  if (it == names_.end()) return false;
  *out = it->second;
  return true;
}

}  // namespace hangwatch::agent
