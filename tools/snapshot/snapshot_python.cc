#include "tools/snapshot/snapshot_python.h"

#include <time.h>

#include <string_view>
#include <utility>

#include "python/frame_placement.h"
#include "unwind/thread_pointer.h"

namespace hangwatch::tools {
namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

SnapshotPython::SnapshotPython(pid_t pid, const symbols::ProcessModules& modules,
                               size_t max_threads, size_t max_frames,
                               std::vector<std::string>* notes) {
  absl::StatusOr<std::unique_ptr<python::PythonProcess>> p =
      python::PythonProcess::Open(pid, modules);
  if (!p.ok()) {
    // Not Python: nothing to say. Python that cannot be read: say so, once.
    if (p.status().code() != absl::StatusCode::kNotFound) {
      notes->push_back("no Python frames: " + std::string(p.status().message()));
    }
    return;
  }
  process_ = std::move(*p);
  slots_.resize(max_threads);
  for (Slot& s : slots_) s.frames.resize(max_frames);
}

std::string SnapshotPython::Describe() const {
  return process_ != nullptr ? process_->Describe() : "";
}

void SnapshotPython::Hook(unwind::PtraceCaptureOptions* options) {
  if (!active()) return;
  options->while_stopped = &SnapshotPython::ReadThread;
  options->while_stopped_context = this;
}

// Inside the stop window: no allocation (the slots were sized before).
void SnapshotPython::ReadThread(void* self_ptr, const unwind::PtraceThread& thread) {
  auto* self = static_cast<SnapshotPython*>(self_ptr);
  const uint64_t start = MonotonicNs();
  // 3.10 matches thread states by pthread_t, which glibc derives from the thread pointer.
  const uint64_t pthread_self = unwind::PthreadSelfFromThreadPointer(
      thread.thread_pointer, self->process_->interpreter().pthread_size);
  const uint64_t tstate = self->process_->chain().FindThreadState(thread.tid, pthread_self);
  if (tstate != 0) {
    if (self->used_ == self->slots_.size()) {
      ++self->dropped_;
    } else {
      Slot& s = self->slots_[self->used_++];
      s.tid = thread.tid;
      s.count = self->process_->chain().ReadChain(tstate, s.frames.data(), s.frames.size(), &s.end);
    }
  }
  self->read_ns_ += MonotonicNs() - start;
}

const SnapshotPython::Slot* SnapshotPython::Find(pid_t tid) const {
  for (size_t i = 0; i < used_; ++i) {
    if (slots_[i].tid == tid) return &slots_[i];
  }
  return nullptr;
}

bool SnapshotPython::InEvalLoop(uint64_t addr, bool is_pc) const {
  const python::InterpreterAddresses& a = process_->interpreter();
  return python::InEvalLoop(addr, is_pc, a.eval_lo, a.eval_hi);
}

void SnapshotPython::Merge(std::vector<OutThread>* threads, std::vector<std::string>* notes) {
  if (!active()) return;
  if (dropped_ > 0) {
    notes->push_back(std::to_string(dropped_) +
                     " Python threads had no buffer left: their Python frames are not shown");
  }
  python::CodeResolver& resolver = process_->resolver();
  for (OutThread& ot : *threads) {
    const Slot* slot = Find(ot.thread->tid);
    if (slot == nullptr || slot->count == 0) continue;
    // The Python frames as OutFrames.
    std::vector<OutFrame> py;
    for (size_t i = 0; i < slot->count; ++i) {
      const python::PythonFrame& pf = slot->frames[i];
      OutFrame f;
      f.kind = "python";
      f.addr = pf.code;
      f.method = "python";
      if (const python::CodeInfo* info = resolver.Code(pf.code)) {
        f.symbol = info->name;
        f.file = info->file;
        f.line = resolver.Line(*info, pf.instr);
      } else {
        f.symbol = "??";
      }
      py.push_back(f);
    }
    // Placed in the native stack (python/frame_placement.h); the entries of the same address
    // as an eval-loop frame (inlined functions of the eval loop) go with it.
    std::vector<python::NativeMark> marks(ot.frames.size(), python::NativeMark::kOther);
    for (size_t i = 0; i < ot.frames.size(); ++i) {
      const OutFrame& f = ot.frames[i];
      if (i > 0 && f.addr == ot.frames[i - 1].addr) {
        marks[i] = python::NativeMark::kSameAsPrevious;
      } else if (InEvalLoop(f.addr, std::string_view(f.method) == "pc")) {
        marks[i] = python::NativeMark::kEvalLoop;
      }
    }
    std::vector<python::PlacedFrame> placed(ot.frames.size() + py.size());
    const python::Placement placement = python::PlacePythonFrames(
        marks.data(), marks.size(), slot->frames.data(), slot->count, placed.data(), placed.size());
    std::vector<OutFrame> merged;
    merged.reserve(placement.size);
    for (size_t i = 0; i < placement.size; ++i) {
      const python::PlacedFrame& pf = placed[i];
      merged.push_back(pf.python ? py[pf.index] : ot.frames[pf.index]);
    }
    if (placement.unplaced > 0) {
      notes->push_back("thread " + std::to_string(ot.thread->tid) + ": " +
                       std::to_string(placement.unplaced) +
                       " Python frames had no eval-loop frame in the native stack: listed "
                       "after it");
    }
    if (slot->end != python::ChainEnd::kComplete) {
      notes->push_back("thread " + std::to_string(ot.thread->tid) + ": Python stack truncated (" +
                       python::ChainEndName(slot->end) + ")");
    }
    ot.frames = std::move(merged);
  }
}

}  // namespace hangwatch::tools
