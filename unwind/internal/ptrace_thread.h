// Per-thread work of a ptrace snapshot: what is read from /proc about each thread before the
// stop, its registers once it is stopped, the copy of its stack, and the /proc fallback for a
// thread that never stopped. Split from ptrace_capture.cc, which decides when each of these
// runs (attach, stop window, detach); here is only how one thread is read. The /proc formats
// themselves are parsed by unwind/proc_files.h. Internal to unwind/. Linux only.
#ifndef HANGWATCH_UNWIND_INTERNAL_PTRACE_THREAD_H_
#define HANGWATCH_UNWIND_INTERNAL_PTRACE_THREAD_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "unwind/ptrace_capture.h"

namespace hangwatch::unwind::internal {

// One readable mapping of the target, for stack bounds.
struct Mapping {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// Readable mappings of /proc/PID/maps, sorted (the kernel lists them in address order); empty
// when the file cannot be read whole.
std::vector<Mapping> ReadReadableMappings(pid_t pid);

// Thread ids listed in /proc/PID/task, sorted. Returns false (errno set) when the directory is
// gone.
bool ListTasks(pid_t pid, std::vector<pid_t>* out);

// Name, state and CPU time, read while the thread still runs (a stopped tracee reads as 't').
// `task_fd` is /proc/PID/task (or -1).
void ReadThreadInfo(pid_t pid, int task_fd, PtraceThread* t);

// The system call the thread sleeps in (/proc/PID/task/TID/syscall) into t->syscall_before,
// read before the stop; left empty when it runs or the line is not this program's (emulator).
void ReadSyscallBefore(pid_t pid, int task_fd, PtraceThread* t);

// Registers of a stopped tracee. Returns false (errno set) on failure.
bool ReadRegisters(PtraceThread* t);

// Copies [sp, min(sp + budget, stack top)) into t->stack (already sized to the budget).
void CopyStack(pid_t tid, const std::vector<Mapping>& maps, PtraceThread* t);

// For a thread that never stopped: pc and sp from /proc/PID/task/TID/syscall, then its stack.
void ReadBlockedRegisters(pid_t pid, const std::vector<Mapping>& maps, PtraceThread* t);

}  // namespace hangwatch::unwind::internal

#endif  // HANGWATCH_UNWIND_INTERNAL_PTRACE_THREAD_H_
