#include "unwind/proc_blocked_reader.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "unwind/capture_hook.h"
#include "unwind/internal/task_file.h"
#include "unwind/proc_files.h"
#include "unwind/self_memory.h"

namespace hangwatch::unwind {

const char* ProcReadStatusName(ProcReadStatus s) {
  switch (s) {
    case ProcReadStatus::kOk:
      return "ok";
    case ProcReadStatus::kNotBlocked:
      return "not blocked";
    case ProcReadStatus::kInconsistent:
      return "inconsistent";
    case ProcReadStatus::kError:
      return "error";
  }
  return "unknown";
}

namespace {

// Small /proc files read whole. The syscall line is at most ~170 bytes, schedstat ~60, and
// only the start of stat (up to the state) is needed.
struct ProcText {
  char data[256];
  size_t size = 0;
};

bool ReadTaskFile(pid_t tid, internal::TaskFile* file, ProcText* out) {
  const ptrdiff_t n = file->Read(tid, out->data, sizeof(out->data));
  if (n <= 0) return false;
  out->size = static_cast<size_t>(n);
  return true;
}

bool SameText(const ProcText& a, const ProcText& b) {
  return a.size == b.size && std::memcmp(a.data, b.data, a.size) == 0;
}

// Where a sleeping thread is: its syscall line (proc_files.h) with sp and pc both non-zero.
bool ParseSyscall(const ProcText& line, TaskSyscall* sys) {
  if (!ParseTaskSyscall(line.data, line.size, sys)) return false;
  return sys->sp != 0 && sys->pc != 0;
}

uint64_t NowNs(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

namespace internal {
struct ProcTaskFiles : SchedStateFiles {
  TaskFile schedstat{"schedstat"};
  // The last consistent read: whose, and its scheduling counters and syscall line.
  pid_t last_tid = 0;
  ProcText last_sched, last_sys;
};
}  // namespace internal

namespace {

ProcReadStatus ReadBlocked(const ThreadInfo& target, CaptureBuffer* out,
                           internal::ProcTaskFiles* files) {
  if (out == nullptr || target.tid <= 0) return ProcReadStatus::kError;
  out->Reset();
  ProcText stat, sched_before, sched_after, sys_before, sys_after;
  // The syscall line first: "running" settles the common case (a busy thread, state R) in a
  // fraction of what stat costs, and a blocked thread's line is needed anyway.
  if (!ReadTaskFile(target.tid, &files->syscall, &sys_before)) return ProcReadStatus::kError;
  if (SaysRunning(sys_before.data, sys_before.size)) {
    out->sched_state = 'R';
    return ProcReadStatus::kNotBlocked;
  }
  if (!ReadTaskFile(target.tid, &files->stat, &stat)) return ProcReadStatus::kError;
  const char state = ParseStatState(stat.data, stat.size);
  out->sched_state = state;  // kept on every path from here: callers falling back reuse it
  if (state != 'S' && state != 'D') return ProcReadStatus::kNotBlocked;
  // An emulator's /proc shows the host's registers (the state read above is still the
  // thread's): the signal reads the thread instead.
  if (!ProcSyscallLinesAreOurs()) return ProcReadStatus::kError;
  if (!ReadTaskFile(target.tid, &files->schedstat, &sched_before)) return ProcReadStatus::kError;
  TaskSyscall sys;
  // Not "running" (checked above): a line without sp and pc is one we cannot use.
  if (!ParseSyscall(sys_before, &sys)) return ProcReadStatus::kError;
  const uintptr_t sp = sys.sp;
  const uintptr_t pc = sys.pc;
  // A blocked thread's sp is in its own stack. When it is not, the registers are not the ones
  // this process runs with (under qemu-user, /proc shows the emulator's host registers), or the
  // thread sleeps on an alternate signal stack: the signal reads it instead.
  if (target.stack.hi != 0 && !(target.stack.Contains(sp, 0) && sp < target.stack.hi)) {
    return ProcReadStatus::kError;
  }
  const uint64_t timestamp = NowNs(CLOCK_MONOTONIC);

  // Copy [sp, min(hi, sp + max)) out of the thread's stack.
  size_t copied = 0;
  if (out->max_stack_bytes() > 0 && target.stack.Contains(sp, 0) && sp < target.stack.hi) {
    const size_t len = std::min<size_t>(target.stack.hi - sp, out->max_stack_bytes());
    iovec local{out->stack_storage(), len};
    iovec remote{reinterpret_cast<void*>(sp), len};
    const ssize_t n = ReadSelfV(&local, 1, &remote, 1);
    if (n <= 0) return ProcReadStatus::kError;
    copied = static_cast<size_t>(n);
  }

  // A runtime's own state (the Python frames), read inside the same proof window.
  size_t extra = 0;
  if (CaptureHook* hook = CurrentCaptureHook(); hook != nullptr && out->max_extra_words() > 0) {
    const MemoryView copy{sp, copied, out->stack_storage()};
    extra = hook->Read(target.tid, copy, out->extra_storage(), out->max_extra_words());
  }

  // Proof that the thread did not run while it was read: same scheduling counters, same
  // system call at the same place.
  if (!ReadTaskFile(target.tid, &files->schedstat, &sched_after) ||
      !ReadTaskFile(target.tid, &files->syscall, &sys_after)) {
    return ProcReadStatus::kError;
  }
  if (!SameText(sched_before, sched_after) || !SameText(sys_before, sys_after)) {
    return ProcReadStatus::kInconsistent;
  }
  files->last_tid = target.tid;
  files->last_sched = sched_after;
  files->last_sys = sys_after;

  out->regs = Registers{};
  out->regs.pc = pc;
  out->regs.sp = sp;
  out->stack_base = sp;
  out->stack_size = copied;
  if (out->max_frames() > 0) {
    out->frame_storage()[0] = pc;
    out->num_frames = 1;
    out->frames_truncated = false;
  }
  out->timestamp_ns = timestamp;
  out->cpu_time_ns = NowNs(target.cpu_clock);
  out->sched_state = state;
  out->pause_ns = 0;
  out->method = SampleMethod::kProc;
  out->num_extra = extra;
  out->syscall_known = sys.fields == 9;
  out->syscall_nr = sys.nr;
  std::memcpy(out->syscall_args, sys.args, sizeof(out->syscall_args));
  return ProcReadStatus::kOk;
}

}  // namespace

ProcReadStatus ReadBlockedThread(const ThreadInfo& target, CaptureBuffer* out) {
  internal::ProcTaskFiles files;
  return ReadBlocked(target, out, &files);
}

ProcFirstSampler::ProcFirstSampler(ThreadSampler* fallback)
    : fallback_(fallback), files_(std::make_unique<internal::ProcTaskFiles>()) {
  (void)ProcSyscallLinesAreOurs();  // found here, not at the first capture
}

ProcFirstSampler::~ProcFirstSampler() = default;

CaptureStatus ProcFirstSampler::Capture(const ThreadInfo& target, CaptureBuffer* out) {
  // The cached files serve one capture at a time; a concurrent caller opens its own.
  ProcReadStatus read;
  if (!files_in_use_.exchange(true, std::memory_order_acquire)) {
    read = ReadBlocked(target, out, files_.get());
    files_in_use_.store(false, std::memory_order_release);
  } else {
    read = ReadBlockedThread(target, out);
  }
  const char state = out != nullptr ? out->sched_state : '?';  // '?' when stat was unreadable
  switch (read) {
    case ProcReadStatus::kOk:
      proc_reads_.fetch_add(1, std::memory_order_relaxed);
      return CaptureStatus::kOk;
    case ProcReadStatus::kNotBlocked:
      not_blocked_.fetch_add(1, std::memory_order_relaxed);
      break;
    case ProcReadStatus::kInconsistent:
      inconsistent_.fetch_add(1, std::memory_order_relaxed);
      break;
    case ProcReadStatus::kError:
      errors_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  // An exited main thread stays a zombie while the process lives: no signal would be handled.
  if (state == 'Z' || state == 'X') return CaptureStatus::kThreadExited;
  if (fallback_ == nullptr) return CaptureStatus::kNotStarted;
  const CaptureStatus status = fallback_->Capture(target, out);
  // The state read above, just before the signal, is the one a fallback would read again
  // (a SignalSampler with read_sched_state = false leaves '?'): one /proc read per sample.
  if (status == CaptureStatus::kOk && out->sched_state == '?') out->sched_state = state;
  return status;
}

bool ProcFirstSampler::UnchangedSinceLastRead(const ThreadInfo& target) {
  if (files_in_use_.exchange(true, std::memory_order_acquire)) return false;
  internal::ProcTaskFiles* f = files_.get();
  ProcText sched, sys;
  const bool same = f->last_tid == target.tid && target.tid > 0 &&
                    ReadTaskFile(target.tid, &f->schedstat, &sched) &&
                    ReadTaskFile(target.tid, &f->syscall, &sys) && SameText(sched, f->last_sched) &&
                    SameText(sys, f->last_sys);
  files_in_use_.store(false, std::memory_order_release);
  return same;
}

ProcFirstSampler::Stats ProcFirstSampler::stats() const {
  Stats s;
  s.proc_reads = proc_reads_.load(std::memory_order_relaxed);
  s.not_blocked = not_blocked_.load(std::memory_order_relaxed);
  s.inconsistent = inconsistent_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace hangwatch::unwind
