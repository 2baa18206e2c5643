#include "tools/snapshot/snapshot_ruby.h"

#include <time.h>

#include <cstdio>

#include <string_view>
#include <utility>

#include "python/frame_placement.h"
#include "unwind/thread_pointer.h"

namespace hangwatch::tools {
namespace {

uint64_t RubyClockNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

SnapshotRuby::SnapshotRuby(pid_t pid, const symbols::ProcessModules& modules, size_t max_threads,
                           size_t max_frames, std::vector<std::string>* notes) {
  absl::StatusOr<std::unique_ptr<ruby::RubyProcess>> p = ruby::RubyProcess::Open(pid, modules);
  if (!p.ok()) {
    // Not Ruby: nothing to say. Ruby that cannot be read: say so, once.
    if (p.status().code() != absl::StatusCode::kNotFound) {
      notes->push_back("no Ruby frames: " + std::string(p.status().message()));
    }
    return;
  }
  process_ = std::move(*p);
  slots_.resize(max_threads);
  for (Slot& s : slots_) s.frames.resize(max_frames);
}

std::unique_ptr<SnapshotRuby> SnapshotRuby::Prepare(pid_t pid,
                                                    const symbols::ProcessModules* modules,
                                                    size_t max_threads, size_t max_frames,
                                                    std::vector<std::string>* notes,
                                                    unwind::PtraceCaptureOptions* options) {
  if (pid <= 0 || modules == nullptr) return nullptr;
  auto ruby = std::make_unique<SnapshotRuby>(pid, *modules, max_threads, max_frames, notes);
  if (!ruby->active()) return nullptr;
  ruby->Hook(options);
  return ruby;
}

std::string SnapshotRuby::TimingsLine() const {
  char line[96];
  std::snprintf(line, sizeof(line), "ruby: control frames read in %.3f ms inside the stop window\n",
                static_cast<double>(read_ns_) / 1e6);
  return line;
}

std::string SnapshotRuby::Describe() const {
  return process_ != nullptr ? process_->Describe() : "";
}

void SnapshotRuby::Hook(unwind::PtraceCaptureOptions* options) {
  if (!active() || options->while_stopped != nullptr) return;
  options->while_stopped = &SnapshotRuby::ReadThread;
  options->while_stopped_context = this;
}

// Inside the stop window: no allocation (the slots were sized before).
void SnapshotRuby::ReadThread(void* self_ptr, const unwind::PtraceThread& thread) {
  auto* self = static_cast<SnapshotRuby*>(self_ptr);
  const uint64_t start = RubyClockNs();
  const ruby::VmReader& reader = self->process_->reader();
  // By its tid; in a forked child by its pthread_t (x86_64: its thread pointer; aarch64 would
  // need glibc's sizeof(struct pthread): not looked up, tid only).
  const uint64_t ec = reader.ExecutionContext(reader.FindThread(
      thread.tid, unwind::PthreadSelfFromThreadPointer(thread.thread_pointer, 0)));
  if (ec != 0) {
    if (self->used_ == self->slots_.size()) {
      ++self->dropped_;
    } else {
      Slot& s = self->slots_[self->used_++];
      s.tid = thread.tid;
      s.count = reader.ReadFrames(ec, s.frames.data(), s.frames.size(), &s.end);
    }
  }
  self->read_ns_ += RubyClockNs() - start;
}

const SnapshotRuby::Slot* SnapshotRuby::Find(pid_t tid) const {
  for (size_t i = 0; i < used_; ++i) {
    if (slots_[i].tid == tid) return &slots_[i];
  }
  return nullptr;
}

bool SnapshotRuby::Merge(std::vector<OutThread>* threads, std::vector<std::string>* notes) {
  if (!active()) return false;
  if (dropped_ > 0) {
    notes->push_back(std::to_string(dropped_) +
                     " Ruby threads had no buffer left: their Ruby frames are not shown");
  }
  ruby::IseqResolver& resolver = process_->resolver();
  const ruby::VmAddresses& vm = process_->vm();
  for (OutThread& ot : *threads) {
    const Slot* slot = Find(ot.thread->tid);
    if (slot == nullptr || slot->count == 0) continue;
    // The Ruby frames as OutFrames, and as the placement's frames (FINISH: a group's end).
    std::vector<OutFrame> rb;
    std::vector<python::PythonFrame> groups;
    for (size_t i = 0; i < slot->count; ++i) {
      const ruby::RubyFrame& frame = slot->frames[i];
      OutFrame f;
      f.addr = frame.iseq;
      f.method = "ruby";
      f.kind = "ruby";
      if (const ruby::IseqInfo* info = resolver.Iseq(frame.iseq)) {
        if (info->vm_placeholder) continue;
        f.symbol = info->label;
        f.file = info->path;
        const ruby::IseqLine line =
            resolver.Line(*info, ruby::IseqResolver::Position(*info, frame.pc));
        f.line = line.line;
        f.line_is_definition = line.is_definition;
      } else {
        f.symbol = "??";
      }
      python::PythonFrame g;
      g.code = frame.iseq;
      g.entry = frame.finish;
      groups.push_back(g);
      rb.push_back(f);
    }
    std::vector<python::NativeMark> marks(ot.frames.size(), python::NativeMark::kOther);
    for (size_t i = 0; i < ot.frames.size(); ++i) {
      const OutFrame& f = ot.frames[i];
      if (i > 0 && f.addr == ot.frames[i - 1].addr) {
        marks[i] = python::NativeMark::kSameAsPrevious;
      } else if (python::InEvalLoop(f.addr, std::string_view(f.method) == "pc", vm.exec_lo,
                                    vm.exec_hi)) {
        marks[i] = python::NativeMark::kEvalLoop;
      }
    }
    std::vector<python::PlacedFrame> placed(ot.frames.size() + rb.size());
    const python::Placement placement = python::PlacePythonFrames(
        marks.data(), marks.size(), groups.data(), groups.size(), placed.data(), placed.size());
    std::vector<OutFrame> merged;
    merged.reserve(placement.size);
    for (size_t i = 0; i < placement.size; ++i) {
      const python::PlacedFrame& pf = placed[i];
      merged.push_back(pf.python ? rb[pf.index] : ot.frames[pf.index]);
    }
    if (placement.unplaced > 0) {
      notes->push_back("thread " + std::to_string(ot.thread->tid) + ": " +
                       std::to_string(placement.unplaced) +
                       " Ruby frames had no rb_vm_exec frame in the native stack: listed after it");
    }
    if (slot->end != ruby::FramesEnd::kComplete) {
      notes->push_back("thread " + std::to_string(ot.thread->tid) + ": Ruby stack truncated (" +
                       ruby::FramesEndName(slot->end) + ")");
    }
    ot.frames = std::move(merged);
  }
  return true;
}

}  // namespace hangwatch::tools
