// PtraceCapture: every thread of ANOTHER process, stopped as briefly as possible.
//
// The snapshot is taken in three steps, and only the middle one stops the target:
//   1. before the stop: list /proc/PID/task, read each thread's name, scheduler state, CPU
//      time (a stopped thread would read as 't') and the system call it sleeps in (the stop
//      turns a timed wait into restart_syscall, which hides the call), read /proc/PID/maps for
//      stack bounds, attach
//      with PTRACE_SEIZE (which does not stop anything) and allocate every buffer;
//   2. the stop window: PTRACE_INTERRUPT every thread, wait for each with a bound, re-list the
//      tasks to catch threads created meanwhile, copy the registers (PTRACE_GETREGSET,
//      NT_PRSTATUS) and a bounded slice of each stack from sp upwards (process_vm_readv), then
//      PTRACE_DETACH every thread (re-injecting any signal that arrived during the stop);
//   3. after the stop: nothing here. Walking and symbolizing the copies is the caller's job.
//
// The target is never left stopped by us: every seized thread is detached on every path (error,
// timeout, a thread that vanishes, a cancellation request); SIGINT, SIGTERM, SIGHUP and SIGQUIT
// are blocked in the calling thread during the window and re-delivered after detaching, so
// Ctrl-C cannot kill the tracer between "stopped" and "resumed". If the tracer is killed anyway
// (SIGKILL), the kernel detaches its tracees and, because PTRACE_INTERRUPT is not a SIGSTOP,
// they run again. A thread stuck in uninterruptible sleep past the timeout cannot be detached
// (the kernel only detaches stopped tracees); it is reported as kNotStopped, retried when the
// PtraceCapture is destroyed, and released by the kernel at the latest when the tracer exits.
//
// Linux only. libc and kernel APIs only (this is unwind/): no Abseil, no logging.
#ifndef HANGWATCH_UNWIND_PTRACE_CAPTURE_H_
#define HANGWATCH_UNWIND_PTRACE_CAPTURE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "unwind/memory_view.h"
#include "unwind/proc_files.h"
#include "unwind/registers.h"

namespace hangwatch::unwind {

// What happened to one thread.
enum class PtraceThreadStatus : uint8_t {
  kCaptured = 0,  // registers and stack copied
  kVanished,      // exited between listing and capture (skipped, with a note)
  kZombie,        // already exited, not yet reaped (state Z/X): nothing to capture
  kNotStopped,    // did not stop within the timeout (e.g. uninterruptible sleep)
  kFailed,        // a ptrace or read call failed (see error_errno)
};
const char* PtraceThreadStatusName(PtraceThreadStatus status);

// Whole-snapshot outcome. Anything but kOk means no usable snapshot.
enum class PtraceError : uint8_t {
  kOk = 0,
  kNoSuchProcess,  // the pid does not exist
  kPermission,     // EPERM from PTRACE_SEIZE: another user, Yama ptrace_scope, no capability
  kAlreadyTraced,  // another tracer (a debugger) is attached; tracer_pid says which
  kZombie,         // the process has exited and is waiting to be reaped
  kExited,         // the process exited before or during the snapshot
  kIsSelf,         // the caller's own process (a thread cannot trace its own thread group)
  kCancelled,      // a blocked termination signal arrived during the window
  kSystem,         // anything else; error_errno says what
};

// Up to 33 registers in DWARF numbering, for CFI unwinders: x86_64 0..16 (rax, rdx, rcx, rbx,
// rsi, rdi, rbp, rsp, r8..r15, rip); aarch64 0..32 (x0..x30, sp, pc).
inline constexpr size_t kMaxDwarfRegisters = 33;

// Allocator for the stack copies: resize() leaves the bytes uninitialized. A buffer is sized to
// the whole budget before the stop, but process_vm_readv usually fills only a few pages of it
// (the stack above sp is short); zero-filling the rest would fault in every page of every
// buffer for nothing.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialization: no zeroing
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using StackBytes = std::vector<unsigned char, UninitializedAllocator<unsigned char>>;

struct PtraceThread {
  pid_t tid = 0;
  std::string name;           // /proc/PID/task/TID/comm, without the newline
  char state = '?';           // R, S, D, T, t, Z, ... read before the stop
  uint64_t cpu_ns = 0;        // user + system CPU time (schedstat when available, else stat ticks)
  bool cpu_ns_exact = false;  // true when cpu_ns came from schedstat (ns), false: clock ticks
  PtraceThreadStatus status = PtraceThreadStatus::kFailed;
  int error_errno = 0;               // for kFailed
  bool created_during_stop = false;  // found by re-listing the tasks inside the window
  int pending_signal = 0;            // a signal that stopped it instead; re-injected on detach
  uint64_t paused_ns = 0;            // how long we kept it stopped (its stop seen -> detach)
  // /proc/PID/task/TID/syscall read just before the stop: the call the thread slept in and its
  // arguments (fields 0 when it ran, the line was unreadable or the thread appeared during the
  // stop). The stop makes a timed wait (futex with a timeout, nanosleep, poll) resume as
  // restart_syscall, whose number no longer says which call it was; this still does.
  TaskSyscall syscall_before;

  Registers regs;  // pc, sp, fp (and lr on arm64)
  uint64_t dwarf_regs[kMaxDwarfRegisters] = {};
  size_t num_dwarf_regs = 0;
  int64_t syscall_nr = -1;  // x86_64 orig_rax / arm64 syscallno when stopped inside a syscall
  // The thread pointer: x86_64 fs_base, aarch64 TPIDR_EL0 (NT_ARM_TLS); 0 when unread.
  // unwind/thread_pointer.h turns it into glibc's pthread_self().
  uint64_t thread_pointer = 0;

  StackBounds stack_bounds;  // mapping holding sp ({0, 0} when unknown)
  uintptr_t stack_base = 0;  // target address of stack[0] (== regs.sp, rounded down)
  StackBytes stack;          // bytes copied (size() may be < stack_bytes)

  MemoryView stack_view() const { return MemoryView{stack_base, stack.size(), stack.data()}; }
};

struct PtraceCaptureOptions {
  size_t stack_bytes = 64 * 1024;  // copied from sp upwards, clipped to the stack mapping
  int stop_timeout_ms = 1000;      // bound on the wait for all threads to stop
  size_t max_threads = 8192;       // threads beyond are not stopped (noted in `omitted`)
  int relist_rounds = 8;           // bound on re-listing for threads created during the stop
  // true: every thread is stopped at once, copied, then all resume: one instant for the whole
  // process, but a thread that stops early waits for the slowest one to reach its stop (the
  // scheduler decides how long on a busy machine). false: each thread is copied and resumed as
  // soon as it stops, so each pauses only for its own copy (microseconds), at the cost of
  // threads being captured at slightly different instants.
  bool stop_all = true;
  // Run the calling thread under SCHED_FIFO (lowest priority) during the stop window when the
  // system allows it, so that the tracer is not the one waiting for a CPU while threads are
  // stopped. Restored before returning.
  bool realtime_window = true;
  // Called for each thread right after its registers and stack were copied, while it is still
  // stopped (with stop_all: while every thread is), so that other state read from the target
  // (`hangwatch snapshot`: a Python thread's frame chain) is from the same instant as the copy.
  // It lengthens the stop: it must be short, bounded and allocation-free (buffers prepared
  // before the capture).
  void (*while_stopped)(void* context, const PtraceThread& thread) = nullptr;
  void* while_stopped_context = nullptr;
};

struct PtraceSnapshot {
  PtraceError error = PtraceError::kOk;
  int error_errno = 0;
  pid_t tracer_pid = 0;  // for kAlreadyTraced
  pid_t pid = 0;
  std::vector<PtraceThread> threads;  // sorted by tid
  size_t omitted = 0;                 // threads over max_threads
  uint64_t stopped_ns = 0;            // first PTRACE_INTERRUPT to last PTRACE_DETACH
  uint64_t stop_latency_ns = 0;       // first PTRACE_INTERRUPT to the last thread stopped
  uint64_t max_thread_pause_ns = 0;   // the longest any one thread was kept stopped
  uint64_t capture_ns = 0;            // whole call, including what happens before the stop

  size_t CountWithStatus(PtraceThreadStatus s) const;
};

// Takes the snapshot. Blocks for at most about stop_timeout_ms plus the time to read /proc.
// Returns with every thread it stopped running again (see the header comment for the one
// exception: threads that never stopped).
PtraceSnapshot CapturePtraceSnapshot(pid_t pid, const PtraceCaptureOptions& options = {});

// Detaches threads that did not stop within the timeout if they have stopped since. Called by
// CapturePtraceSnapshot before returning; call it again later (e.g. before exiting) to release
// a late stopper sooner than the kernel would. Returns how many are still attached.
size_t ReleaseLateStoppers();

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_PTRACE_CAPTURE_H_
