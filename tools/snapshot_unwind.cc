#include "tools/snapshot_unwind.h"

#include <algorithm>
#include <utility>

#include "unwind/frame_walker.h"

namespace hangwatch::tools {

const char* SnapshotUnwindMethodName(SnapshotUnwindMethod m) {
  switch (m) {
    case SnapshotUnwindMethod::kFramePointers:
      return "fp";
    case SnapshotUnwindMethod::kHybrid:
      return "hybrid";
    case SnapshotUnwindMethod::kNone:
      break;
  }
  return "none";
}

SnapshotUnwinder::SnapshotUnwinder(const unwind::PtraceSnapshot& snapshot, size_t max_frames,
                                   bool use_cfi, std::string maps_text)
    : snapshot_(snapshot),
      max_frames_(std::max<size_t>(max_frames, 1)),
      use_cfi_(use_cfi),
      maps_text_(std::move(maps_text)) {}

SnapshotUnwinder::~SnapshotUnwinder() = default;

void SnapshotUnwinder::Prepare() {
  if (!use_cfi_ || cfi_ready_) return;
  cfi_ready_ = true;
  auto cfi = symbols::CfiUnwinder::ForProcess(snapshot_.pid, maps_text_);
  if (cfi.ok()) {
    cfi_ = std::move(*cfi);
  } else {
    cfi_error_ = std::string(cfi.status().message());
  }
  maps_text_.clear();
  if (cfi_ == nullptr && cfi_error_.empty()) cfi_error_ = "no CFI unwinder";
}

UnwoundStack SnapshotUnwinder::Unwind(const unwind::PtraceThread& thread) {
  UnwoundStack result;
  if (thread.regs.pc == 0) return result;
  const bool fp_known = thread.status == unwind::PtraceThreadStatus::kCaptured;

  std::vector<uintptr_t> fp(max_frames_);
  unwind::WalkResult walk{};
  if (fp_known) {
    walk = unwind::WalkFramePointers(thread.stack_view(), thread.regs, fp.data(), fp.size());
  } else {
    fp[0] = thread.regs.pc;  // /proc gave pc and sp only: no frame-pointer chain to follow
    walk.num_frames = 1;
  }
  fp.resize(walk.num_frames);

  std::vector<uintptr_t> cfi;
  std::vector<symbols::FrameMethod> methods;
  bool cfi_truncated = false;
  if (use_cfi_) {
    Prepare();
    if (cfi_ != nullptr) {
      // This thread's copy first; then the other threads' (a pointer into another thread's
      // stack is rare but legal). Nothing is read from the live process.
      std::vector<unwind::MemoryView> views;
      views.push_back(thread.stack_view());
      for (const unwind::PtraceThread& t : snapshot_.threads) {
        if (&t != &thread && !t.stack.empty()) views.push_back(t.stack_view());
      }
      symbols::UnwindStart start;
      start.regs = thread.regs;
      start.fp_known = fp_known;
      cfi.resize(max_frames_);
      methods.resize(max_frames_);
      symbols::UnwindResult r = cfi_->Unwind(start, views, cfi.data(), methods.data(), cfi.size(),
                                             symbols::CfiUnwinder::Mode::kHybrid);
      cfi.resize(r.num_frames);
      methods.resize(r.num_frames);
      cfi_truncated = r.truncated;
    }
  }

  if (!cfi.empty() && cfi.size() >= fp.size()) {
    result.frames.assign(cfi.begin(), cfi.end());
    for (symbols::FrameMethod m : methods) result.methods.push_back(symbols::FrameMethodName(m));
    result.method = SnapshotUnwindMethod::kHybrid;
    result.truncated = cfi_truncated;
  } else {
    result.frames.assign(fp.begin(), fp.end());
    for (size_t i = 0; i < fp.size(); ++i) result.methods.push_back(i == 0 ? "pc" : "fp");
    result.method = SnapshotUnwindMethod::kFramePointers;
    result.truncated = walk.truncated;
  }
  return result;
}

}  // namespace hangwatch::tools
