#include "tools/snapshot_unwind.h"

#include <elfutils/libdwfl.h>

#include <algorithm>
#include <cstring>

#include "unwind/frame_walker.h"
#include "unwind/memory_view.h"

namespace hangwatch::tools {

const char* SnapshotUnwindMethodName(SnapshotUnwindMethod m) {
  switch (m) {
    case SnapshotUnwindMethod::kFramePointers:
      return "fp";
    case SnapshotUnwindMethod::kCfi:
      return "cfi";
    case SnapshotUnwindMethod::kNone:
      break;
  }
  return "none";
}

// libdwfl state: the target's modules (reported from /proc/PID/maps; their ELF files and
// .eh_frame / .debug_frame read from disk) and thread callbacks that serve registers and stack
// words from the snapshot.
struct SnapshotUnwinder::Cfi {
  Dwfl* dwfl = nullptr;
  const unwind::PtraceSnapshot* snapshot = nullptr;
  const unwind::PtraceThread* current = nullptr;  // the thread being unwound
  std::vector<uint64_t>* out = nullptr;
  size_t max_frames = 0;
  bool truncated = false;
  char* debuginfo_path = nullptr;

  ~Cfi() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  // Stack words come from the copies: the current thread's first, then any other thread's
  // (a pointer into another thread's stack is rare but legal). Nothing is read from the live
  // process: it has been running since the copy and its memory no longer matches.
  static bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    auto* self = static_cast<Cfi*>(arg);
    uintptr_t word = 0;
    if (self->current != nullptr && self->current->stack_view().ReadWord(addr, &word)) {
      *result = word;
      return true;
    }
    for (const unwind::PtraceThread& t : self->snapshot->threads) {
      if (&t != self->current && t.stack_view().ReadWord(addr, &word)) {
        *result = word;
        return true;
      }
    }
    return false;
  }

  static pid_t NextThread(Dwfl*, void* arg, void** thread_argp) {
    // Iteration is not used (dwfl_getthread_frames asks for one tid through GetThread).
    (void)arg;
    *thread_argp = nullptr;
    return 0;
  }

  static bool GetThread(Dwfl*, pid_t tid, void* arg, void** thread_argp) {
    auto* self = static_cast<Cfi*>(arg);
    if (self->current == nullptr || self->current->tid != tid) return false;
    *thread_argp = const_cast<unwind::PtraceThread*>(self->current);
    return true;
  }

  static bool SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg) {
    auto* t = static_cast<const unwind::PtraceThread*>(thread_arg);
    if (t->num_dwarf_regs == 0) return false;
    Dwarf_Word regs[unwind::kMaxDwarfRegisters];
    for (size_t i = 0; i < t->num_dwarf_regs; ++i) regs[i] = t->dwarf_regs[i];
#if defined(__x86_64__)
    // DWARF 0..15 are the general registers; 16 is the return-address column (rip).
    if (!dwfl_thread_state_registers(thread, 0, 16, regs)) return false;
#elif defined(__aarch64__)
    // x0..x30 and sp (31); the pc has no DWARF number of its own here.
    if (!dwfl_thread_state_registers(thread, 0, 32, regs)) return false;
#endif
    dwfl_thread_state_register_pc(thread, t->regs.pc);
    return true;
  }

  static int Frame(Dwfl_Frame* frame, void* arg) {
    auto* self = static_cast<Cfi*>(arg);
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
    if (self->out->size() >= self->max_frames) {
      self->truncated = true;
      return DWARF_CB_ABORT;
    }
    if (pc == 0) return DWARF_CB_ABORT;
    self->out->push_back(pc);
    return DWARF_CB_OK;
  }
};

namespace {

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    SnapshotUnwinder::Cfi::NextThread,
    SnapshotUnwinder::Cfi::GetThread,
    SnapshotUnwinder::Cfi::MemoryRead,
    SnapshotUnwinder::Cfi::SetInitialRegisters,
    nullptr,  // detach: nothing is attached (the snapshot already detached)
    nullptr,  // thread_detach
};

}  // namespace

SnapshotUnwinder::SnapshotUnwinder(const unwind::PtraceSnapshot& snapshot, size_t max_frames,
                                   bool use_cfi)
    : snapshot_(snapshot), max_frames_(std::max<size_t>(max_frames, 1)), use_cfi_(use_cfi) {}

SnapshotUnwinder::~SnapshotUnwinder() = default;

UnwoundStack SnapshotUnwinder::Unwind(const unwind::PtraceThread& thread) {
  UnwoundStack result;
  if (thread.regs.pc == 0) return result;

  std::vector<uintptr_t> fp(max_frames_);
  unwind::WalkResult walk =
      unwind::WalkFramePointers(thread.stack_view(), thread.regs, fp.data(), fp.size());
  fp.resize(walk.num_frames);
  result.fp_frames = fp.size();

  std::vector<uint64_t> cfi;
  bool cfi_truncated = false;
  if (use_cfi_ && thread.num_dwarf_regs > 0) {
    if (!cfi_ready_) {
      cfi_ready_ = true;
      static const Dwfl_Callbacks kCallbacks = {dwfl_linux_proc_find_elf,
                                                dwfl_standard_find_debuginfo, nullptr, nullptr};
      auto state = std::make_unique<Cfi>();
      state->snapshot = &snapshot_;
      state->dwfl = dwfl_begin(&kCallbacks);
      if (state->dwfl == nullptr) {
        cfi_error_ = dwfl_errmsg(-1);
      } else {
        dwfl_report_begin(state->dwfl);
        int err = dwfl_linux_proc_report(state->dwfl, snapshot_.pid);
        if (dwfl_report_end(state->dwfl, nullptr, nullptr) != 0 || err != 0) {
          cfi_error_ = err > 0 ? std::strerror(err) : dwfl_errmsg(-1);
        } else if (!dwfl_attach_state(state->dwfl, nullptr, snapshot_.pid, &kThreadCallbacks,
                                      state.get())) {
          cfi_error_ = dwfl_errmsg(-1);
        } else {
          cfi_ = std::move(state);
        }
      }
    }
    if (cfi_ != nullptr) {
      cfi_->current = &thread;
      cfi_->out = &cfi;
      cfi_->max_frames = max_frames_;
      cfi_->truncated = false;
      // The return value reports why the walk ended (no CFI for a pc, unreadable memory,
      // outermost frame); the frames collected until then are what counts.
      dwfl_getthread_frames(cfi_->dwfl, thread.tid, Cfi::Frame, cfi_.get());
      cfi_truncated = cfi_->truncated;
      cfi_->current = nullptr;
      cfi_->out = nullptr;
    }
  }
  result.cfi_frames = cfi.size();

  if (!cfi.empty() && cfi.size() >= fp.size()) {
    result.frames = std::move(cfi);
    result.method = SnapshotUnwindMethod::kCfi;
    result.truncated = cfi_truncated;
  } else {
    result.frames.assign(fp.begin(), fp.end());
    result.method = SnapshotUnwindMethod::kFramePointers;
    result.truncated = walk.truncated;
  }
  return result;
}

}  // namespace hangwatch::tools
