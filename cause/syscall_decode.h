// What a thread asleep in a system call waits for, from the numbers of its
// /proc/self/task/TID/syscall line (unwind/proc_files.h, ParseTaskSyscall): the call's name, what
// its arguments mean, and the kind of wait (a lock, a sleep, a child, a file, a descriptor).
//
// The numbers are those of the architecture this is built for (x86_64 or aarch64: <sys/syscall.h>),
// which is the one the agent's own threads run. libc only; no allocation: the names are static
// strings. A pointer argument (nanosleep's timespec) is read with ReadProcess (guarded reads:
// unwind/self_memory.h for this process, process_vm_readv for another), never dereferenced.
#ifndef HANGWATCH_CAUSE_SYSCALL_DECODE_H_
#define HANGWATCH_CAUSE_SYSCALL_DECODE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "unwind/proc_files.h"

namespace hangwatch::cause {

// What kind of wait a system call is, before looking at what it waits on.
enum class SyscallWait : uint8_t {
  kUnknown = 0,  // a number this table does not know
  kFutex,        // futex: a lock, a condition variable or a semaphore (lock_owner.h)
  kSleep,        // nanosleep, clock_nanosleep, pause; poll / select without descriptors
  kChild,        // wait4, waitid
  kFile,         // a call on a path or a descriptor that may be a file: read, fsync, openat...
  kDescriptors,  // poll, select, epoll_wait with descriptors: ipc or io, by what they are
  kOther,        // anything else: reported with its name and arguments
};

struct SyscallDesc {
  const char* name = nullptr;  // "futex"; nullptr when unknown
  SyscallWait wait = SyscallWait::kUnknown;
  int nargs = 0;  // arguments worth printing
  // What each argument is: "fd", "path", "buf", "count", "addr", "op", "val", "pid", "timeout",
  // "nfds", "flags"... (nullptr past nargs).
  const char* args[6] = {};
};

// The description of system call `nr` on this architecture; name nullptr when unknown.
SyscallDesc DescribeSyscall(int64_t nr);

// A decoded wait of one thread.
struct DecodedWait {
  SyscallWait wait = SyscallWait::kUnknown;
  int64_t nr = -1;
  const char* name = nullptr;
  uint64_t args[6] = {};
  // kSleep: the time asked for, when the call carries it (0: unknown or forever).
  uint64_t sleep_ns = 0;
  bool sleep_forever = false;
  // kChild: the child waited for (pid > 0), or 0 for any child, or -pgid for a group.
  int64_t child = 0;
  // kFutex: the futex word's address, its operation and expected value.
  uint64_t futex_addr = 0;
  uint32_t futex_op = 0;
  uint32_t futex_val = 0;
  // kFile / kDescriptors: the descriptor (or -1), and for calls on a path its address.
  int fd = -1;
  uint64_t path_addr = 0;
};

// Decodes a syscall line already parsed. `sys.fields` must be 9 (inside a system call); a line
// of 3 fields (blocked outside one) decodes as kUnknown. Reads this process's memory (guarded)
// for the sleeps' timespec, so it decodes threads of this process only.
DecodedWait DecodeWait(const unwind::TaskSyscall& sys);

// The same for a thread of process `pid` (0: this one): `hangwatch snapshot` decodes another
// process's threads, whose sleeps' timespecs are read from that process.
DecodedWait DecodeWaitOf(pid_t pid, const unwind::TaskSyscall& sys);

// restart_syscall (x86_64 219, aarch64 128): what a thread runs when a wait with a timeout
// (futex, nanosleep, relative clock_nanosleep; poll on x86_64) was interrupted by a stop (a
// ptrace stop, SIGSTOP/SIGCONT) and resumed. The kernel keeps the wait's deadline in the
// thread; the call's own number is gone from its registers, its arguments are not.
bool IsRestartSyscall(int64_t nr);

// The call a thread asleep in restart_syscall restarted, from what the kernel keeps of it: the
// kernel function it sleeps in (`wchan`, /proc/PID/task/TID/wchan: "futex_wait_queue",
// "poll_schedule_timeout"; a restarted sleep shows none of its own) tells the kind, and its
// /proc syscall line's arguments (`args`: the original call's, still in the registers) tell a
// sleep and nanosleep from clock_nanosleep. -1 when neither tells (wchan unreadable, or
// arguments of no sleep).
int64_t RestartedCall(const char* wchan, const uint64_t args[6]);

// A restart_syscall line `sys` of thread `tid` of process `pid` (0: this one) turned into the
// call it restarted, as RestartedCall tells from the thread's /proc wchan: sys->nr replaced and
// true. False (sys unchanged) when the line is no restart or nothing tells.
bool TellRestartedCall(pid_t pid, pid_t tid, unwind::TaskSyscall* sys);

// Copies `size` bytes at address `addr` of process `pid` into `out`: an unmapped or unreadable
// address fails (false, errno set; EFAULT for a short read) instead of faulting. pid 0 is this
// process, read with unwind::ReadSelf (process_vm_readv, or /proc/self/mem where that call is
// refused); another process with process_vm_readv, which needs permission to ptrace it.
bool ReadProcess(pid_t pid, uint64_t addr, void* out, size_t size);

// Writes "name(arg, arg...)" for a decoded wait into out (NUL-terminated, cut to size):
// descriptors as numbers, addresses in hex, e.g. "read(fd 5, 4096)", "futex(0x55b7c0, WAIT)".
size_t FormatCall(const DecodedWait& w, char* out, size_t size);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_SYSCALL_DECODE_H_
