// ReadSelf: copies of this process's own memory that never fault, for code that runs in a
// signal handler, or that reads what another thread may unmap or free at any moment (the
// Python frames of the captured thread, the stack of a thread asleep in the kernel).
//
// The read is process_vm_readv on the own pid: an address that is not mapped fails the read
// (EFAULT), never raises SIGSEGV. Where that system call is refused (ENOSYS under qemu-user,
// which does not implement it; EPERM under some seccomp filters), PrepareSelfMemory opens
// /proc/self/mem instead and the reads become pread() of it, with the same contract: an
// unmapped address fails it (EIO).
//
// Linux only.
#ifndef HANGWATCH_UNWIND_SELF_MEMORY_H_
#define HANGWATCH_UNWIND_SELF_MEMORY_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace hangwatch::unwind {

enum class SelfMemoryMethod : uint8_t {
  kNone,            // neither works: every read fails
  kProcessVmReadv,  // process_vm_readv(getpid(), ...)
  kProcSelfMem,     // pread of /proc/self/mem
};

// Chooses the method: one process_vm_readv of a known word, and when that is refused,
// /proc/self/mem opened (close-on-exec) and read the same way. Call before the first read from
// a signal handler. Not async-signal-safe. On kNone, errno says why the last method tried failed.
//
// A forked child never reads its parent's memory: with process_vm_readv it reads its own at
// once; with the fallback, whose descriptor reads the memory of the process that opened it,
// every read fails until the child calls PrepareSelfMemory, which opens its own (a call from
// another process than the last one chooses afresh).
SelfMemoryMethod PrepareSelfMemory();

// "process_vm_readv", "/proc/self/mem" or "none".
const char* SelfMemoryMethodName(SelfMemoryMethod method);

// As process_vm_readv(getpid(), local, local_count, remote, remote_count, 0): the number of
// bytes copied, which stops short at the first byte that cannot be read; -1 when nothing could
// be. Before PrepareSelfMemory, process_vm_readv. Async-signal-safe.
ssize_t ReadSelfV(const iovec* local, size_t local_count, const iovec* remote, size_t remote_count);

// The n bytes at addr into out, whole, or false. Async-signal-safe.
bool ReadSelf(uintptr_t addr, void* out, size_t n);

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_SELF_MEMORY_H_
