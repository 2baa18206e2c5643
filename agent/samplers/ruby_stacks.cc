#include "agent/samplers/ruby_stacks.h"

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
#include "ruby/iseq_resolver.h"
#include "ruby/ruby_process.h"
#include "symbols/process_modules.h"
#include "unwind/capture_hook.h"
#include "unwind/self_memory.h"

namespace hangwatch::agent {
namespace {

// The hook's bounds: every frame max_frames may ask for (Config::max_frames <= 1024), and the
// innermost 64 KiB of control frames (1024 of them).
constexpr size_t kHookFrames = 1024;
constexpr size_t kHookCopyBytes = 64 * 1024;
constexpr size_t kMaxLabel = 256;
constexpr size_t kMaxPath = 512;
// Room per frame for what the watchdog checks: the iseq's header (flags, wrapper, body) and the
// body up to location.first_lineno.
constexpr size_t kIseqHeaderBytes = 24;
constexpr size_t kBodyBytes = 96;
constexpr uint64_t kRefindEvery = 8;

ruby::RubyCaptureHook* ProcessHook(const ruby::RubyLayout& layout) {
  static ruby::RubyCaptureHook* hook =
      new ruby::RubyCaptureHook(layout, kHookFrames, kHookCopyBytes);
  return hook;
}

uint64_t Word(const unsigned char* p, uint32_t offset) {
  uint64_t w = 0;
  std::memcpy(&w, p + offset, sizeof(w));
  return w;
}

}  // namespace

std::unique_ptr<RubyStacks> RubyStacks::Create(size_t max_frames, std::vector<std::string>* notes) {
  if (const char* v = std::getenv("HANGWATCH_RUBY"); v != nullptr && std::strcmp(v, "0") == 0) {
    return nullptr;
  }
  // Not Ruby: one dynamic-symbol lookup, nothing more.
  if (dlsym(RTLD_DEFAULT, "ruby_current_vm_ptr") == nullptr) return nullptr;
  if (unwind::PrepareSelfMemory() == unwind::SelfMemoryMethod::kNone) {
    notes->push_back(std::string("no Ruby frames: this process can read its own memory neither "
                                 "with process_vm_readv nor from /proc/self/mem (") +
                     std::strerror(errno) + ")");
    return nullptr;
  }
  absl::StatusOr<symbols::ProcessModules> modules = symbols::ReadProcessModules(getpid());
  if (!modules.ok()) return nullptr;
  const python::SelfMemoryReader self;
  absl::StatusOr<ruby::VmAddresses> addresses = ruby::LocateVm(*modules, self);
  if (!addresses.ok()) {
    if (addresses.status().code() != absl::StatusCode::kNotFound) {
      notes->push_back("no Ruby frames: " + std::string(addresses.status().message()));
    }
    return nullptr;
  }
  ruby::RubyLayout layout;
  if (std::string why = ruby::LayoutForVm(*addresses, &layout); !why.empty()) {
    notes->push_back("no Ruby frames: " + addresses->module_path + ": " + why);
    return nullptr;
  }
  return std::unique_ptr<RubyStacks>(new RubyStacks(*addresses, layout, max_frames));
}

RubyStacks::RubyStacks(const ruby::VmAddresses& addresses, const ruby::RubyLayout& layout,
                       size_t max_frames)
    : addresses_(addresses),
      layout_(layout),
      reader_(self_, layout_, addresses_),
      max_frames_(std::clamp<size_t>(max_frames, 1, kHookFrames)),
      hook_(ProcessHook(layout)),
      frames_(new ruby::RubyFrame[max_frames_]),
      positions_(new int64_t[max_frames_]),
      identities_(new uint64_t[max_frames_]),
      placeholders_(new bool[max_frames_]),
      headers_(new unsigned char[max_frames_ * (kIseqHeaderBytes + kBodyBytes)]),
      local_(new iovec[max_frames_]),
      remote_(new iovec[max_frames_]),
      groups_(new python::PythonFrame[max_frames_]),
      marks_(new python::NativeMark[max_frames_]),
      placed_(new python::PlacedFrame[2 * max_frames_]),
      merged_(new uintptr_t[2 * max_frames_]),
      merged_tags_(new uint8_t[2 * max_frames_]) {
  names_.reserve(kMaxNames);
}

RubyStacks::~RubyStacks() {
  if (unwind::CurrentCaptureHook() == hook_) {
    hook_->Watch(0, 0);
    unwind::SetCaptureHook(nullptr);
  }
}

void RubyStacks::Watch(const unwind::ThreadInfo& thread) {
  if (thread.tid == target_.tid) return;
  target_ = thread;
  empty_captures_ = 0;
  if (state_ == State::kActive) hook_->Watch(target_.tid, FindTarget());
}

void RubyStacks::TryActivate() {
  bool not_yet = false;
  const std::string failed = reader_.CheckLayout(&not_yet);
  if (not_yet) return;  // the VM is not running yet: again next sample
  if (!failed.empty()) {
    state_ = State::kOff;
    if (note_) {
      note_("no Ruby frames: ruby " + addresses_.version + " (" + addresses_.module_path +
            "): the layout check failed (" + failed + ")");
    }
    return;
  }
  const uint64_t thread = FindTarget();
  if (thread == 0) return;  // this thread runs no Ruby (yet)
  hook_->Watch(target_.tid, thread);
  unwind::SetCaptureHook(hook_);
  state_ = State::kActive;
}

uint64_t RubyStacks::FindTarget() const {
  // By its tid; in a forked child (a pre-forking server's worker) by its pthread_t.
  return reader_.FindThread(target_.tid, static_cast<uint64_t>(target_.handle));
}

void RubyStacks::BeforeCapture() {
  if (state_ == State::kUnchecked) TryActivate();
}

size_t RubyStacks::CheckIseqs(size_t count) {
  const size_t stride = kIseqHeaderBytes + kBodyBytes;
  if (layout_.iseq_body + 8 > kIseqHeaderBytes || layout_.body_first_lineno + 8 > kBodyBytes) {
    return 0;
  }
  // The iseqs' headers, then their bodies: two reads for the whole chain.
  size_t asked = 0;
  for (; asked < count && asked < IOV_MAX && frames_[asked].iseq != 0; ++asked) {
    local_[asked] = iovec{headers_.get() + asked * stride, kIseqHeaderBytes};
    remote_[asked] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(frames_[asked].iseq)),
                           kIseqHeaderBytes};
  }
  if (asked == 0) return 0;
  ssize_t got = unwind::ReadSelfV(local_.get(), asked, remote_.get(), asked);
  size_t readable = got > 0 ? static_cast<size_t>(got) / kIseqHeaderBytes : 0;
  size_t iseqs = 0;
  for (; iseqs < readable; ++iseqs) {
    const unsigned char* h = headers_.get() + iseqs * stride;
    const uint64_t body = Word(h, layout_.iseq_body);
    if (!ruby::IsIseqFlags(Word(h, 0)) || body == 0) break;
    local_[iseqs] = iovec{headers_.get() + iseqs * stride + kIseqHeaderBytes, kBodyBytes};
    remote_[iseqs] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(body)), kBodyBytes};
  }
  if (iseqs == 0) return 0;
  got = unwind::ReadSelfV(local_.get(), iseqs, remote_.get(), iseqs);
  readable = got > 0 ? static_cast<size_t>(got) / kBodyBytes : 0;
  for (size_t i = 0; i < readable; ++i) {
    const unsigned char* b = headers_.get() + i * stride + kIseqHeaderBytes;
    uint32_t type = 0, size = 0;
    std::memcpy(&type, b + layout_.body_type, 4);
    std::memcpy(&size, b + layout_.body_iseq_size, 4);
    ruby::IseqInfo info;
    info.encoded = Word(b, layout_.body_iseq_encoded);
    info.size = size;
    positions_[i] = ruby::IseqResolver::Position(info, frames_[i].pc);
    const uint64_t label = Word(b, layout_.body_label);
    const uint64_t path = Word(b, layout_.body_pathobj);
    const uint64_t first = Word(b, layout_.body_first_lineno);
    placeholders_[i] = ruby::IsVmPlaceholder(type, first);
    // Not a hash table's hash: two different iseqs at one address must differ here.
    identities_[i] = (path * 0x9e3779b97f4a7c15ull) ^ (label + 0x632be59bd9b4e019ull) ^
                     (info.encoded << 7) ^ (first << 17);
  }
  return std::min(readable, iseqs);
}

size_t RubyStacks::Merge(unwind::CaptureBuffer* buf, size_t n, uint8_t* tags) {
  if (state_ != State::kActive) return n;
  ruby::FramesEnd end = ruby::FramesEnd::kComplete;
  const size_t read =
      ruby::DecodeCaptureWords(buf->extra(), buf->num_extra, frames_.get(), max_frames_, &end);
  const size_t checked = CheckIseqs(read);
  const bool partial = end != ruby::FramesEnd::kComplete || checked < read;
  // The program's frames: the VM's placeholder at the bottom is none.
  size_t count = 0;
  for (size_t i = 0; i < checked; ++i) {
    if (placeholders_[i]) continue;
    frames_[count] = frames_[i];
    positions_[count] = positions_[i];
    identities_[count] = identities_[i];
    groups_[count] = python::PythonFrame{0, frames_[i].iseq, positions_[i], frames_[i].finish};
    ++count;
  }
  if (count == 0) {
    if (++empty_captures_ % kRefindEvery == 0) {
      hook_->Watch(target_.tid, FindTarget());
    }
    return n;
  }
  empty_captures_ = 0;
  n = std::min(n, max_frames_);
  uintptr_t* frames = buf->frame_storage();
  for (size_t i = 0; i < n; ++i) {
    const bool is_pc = i == 0 && tags[0] == static_cast<uint8_t>(FrameMethod::kPc);
    marks_[i] = python::InEvalLoop(frames[i], is_pc, addresses_.exec_lo, addresses_.exec_hi)
                    ? python::NativeMark::kEvalLoop
                    : python::NativeMark::kOther;
  }
  const python::Placement placement = python::PlacePythonFrames(
      marks_.get(), n, groups_.get(), count, placed_.get(), 2 * max_frames_);
  const size_t out = std::min(placement.size, buf->max_frames());
  size_t outermost = out;
  for (size_t i = 0; i < out; ++i) {
    const python::PlacedFrame& p = placed_[i];
    if (p.python) {
      merged_[i] = RuntimeFrameWord(frames_[p.index].iseq, positions_[p.index]);
      merged_tags_[i] = RuntimeFrameTag(FrameLanguage::kRuby, false);
      Name(merged_[i], frames_[p.index], identities_[p.index]);
      if (outermost == out || p.index > placed_[outermost].index) outermost = i;
    } else {
      merged_[i] = frames[p.index];
      merged_tags_[i] = tags[p.index];
    }
  }
  if (partial && outermost != out) {
    merged_tags_[outermost] = RuntimeFrameTag(FrameLanguage::kRuby, true);
  }
  std::copy_n(merged_.get(), out, frames);
  std::copy_n(merged_tags_.get(), out, tags);
  buf->num_frames = out;
  return out;
}

void RubyStacks::Name(uintptr_t word, const ruby::RubyFrame& frame, uint64_t identity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = names_.find(word);
    if (it != names_.end() ? it->second.identity == identity : names_.size() >= kMaxNames) {
      return;
    }
  }
  // A resolver of its own each time: it caches by address, which the identity check above must
  // be able to overrule. Reads the iseq, its strings and one line-table entry.
  ruby::IseqResolver resolver(self_, layout_);
  const ruby::IseqInfo* info = resolver.Iseq(frame.iseq);
  if (info == nullptr) return;
  Named named;
  named.identity = identity;
  named.name.language = FrameLanguage::kRuby;
  named.name.symbol = info->label.substr(0, kMaxLabel);
  named.name.file = info->path.substr(0, kMaxPath);
  const ruby::IseqLine line = resolver.Line(*info, ruby::IseqResolver::Position(*info, frame.pc));
  named.name.line = std::max(line.line, 0);
  named.name.line_is_definition = line.is_definition;
  std::lock_guard<std::mutex> lock(mu_);
  names_[word] = std::move(named);
}

bool RubyStacks::Find(uintptr_t word, RuntimeFrameName* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(word);
  if (it == names_.end()) return false;
  *out = it->second.name;
  return true;
}

}  // namespace hangwatch::agent
