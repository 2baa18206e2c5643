#include "tools/snapshot/snapshot_unwind.h"

#include <algorithm>
#include <utility>

#include "symbols/cfi_or_frame_pointers.h"
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

  std::vector<uintptr_t> frames(max_frames_);
  unwind::WalkResult walk{};
  if (fp_known) {
    walk =
        unwind::WalkFramePointers(thread.stack_view(), thread.regs, frames.data(), frames.size());
  } else {
    frames[0] = thread.regs.pc;  // /proc gave pc and sp only: no frame-pointer chain to follow
    walk.num_frames = 1;
  }

  symbols::CfiUnwinder* cfi = nullptr;
  std::vector<unwind::MemoryView> views;
  std::vector<uintptr_t> scratch;
  if (use_cfi_) {
    Prepare();
    cfi = cfi_.get();
  }
  if (cfi != nullptr) {
    // This thread's copy first; then the other threads' (a pointer into another thread's
    // stack is rare but legal). Nothing is read from the live process.
    views.push_back(thread.stack_view());
    for (const unwind::PtraceThread& t : snapshot_.threads) {
      if (&t != &thread && !t.stack.empty()) views.push_back(t.stack_view());
    }
    scratch.resize(max_frames_);
  }
  symbols::UnwindStart start;
  start.regs = thread.regs;
  start.fp_known = fp_known;
  std::vector<symbols::FrameMethod> methods(max_frames_);
  const symbols::ChosenFrames chosen = symbols::UnwindCfiOrFramePointers(
      cfi, start, views, frames.data(), walk.num_frames, walk.truncated, scratch.data(),
      methods.data(), max_frames_);

  result.frames.assign(frames.begin(), frames.begin() + static_cast<ptrdiff_t>(chosen.num_frames));
  for (size_t i = 0; i < chosen.num_frames; ++i) {
    result.methods.push_back(symbols::FrameMethodName(methods[i]));
  }
  result.method = chosen.cfi ? SnapshotUnwindMethod::kHybrid : SnapshotUnwindMethod::kFramePointers;
  result.truncated = chosen.truncated;
  return result;
}

}  // namespace hangwatch::tools
