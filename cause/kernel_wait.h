// Where in the kernel a blocked thread waits (cause io): its state letter, the kernel function
// it sleeps in (/proc/PID/task/TID/wchan; "0" or empty when running or hidden) and the kernel
// stack (/proc/PID/task/TID/stack: root only, CAP_SYS_ADMIN; unreadable is a normal answer).
// Watchdog thread; libc and unwind/proc_files.h only; caller-provided struct, no allocation.
#ifndef HANGWATCH_CAUSE_KERNEL_WAIT_H_
#define HANGWATCH_CAUSE_KERNEL_WAIT_H_

#include <sys/types.h>

#include <cstddef>

namespace hangwatch::cause {

struct KernelWait {
  char state = '?';      // R, S, D... from stat ('?' when the thread is gone)
  bool d_state = false;  // uninterruptible sleep (disk, NFS, FUSE, page fault)
  char wchan[64] = {};   // "folio_wait_bit_common", "fuse_wait_answer"...; "" when unknown
  bool stack_readable = false;
  int stack_frames = 0;  // frames in /proc/.../stack
  // The kernel frames' function names, innermost first, separated by " <- " (offsets
  // dropped), cut to fit: "request_wait_answer <- fuse_simple_request <- fuse_readpage ...".
  char stack[512] = {};
};

// Reads thread `tid` of process `pid` (0: this process). False when the thread is gone.
bool ReadKernelWait(pid_t pid, pid_t tid, KernelWait* out);

// "D in fuse_wait_answer (kernel: request_wait_answer <- ...)" into buf. Returns the length.
size_t FormatSummary(const KernelWait& w, char* buf, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_KERNEL_WAIT_H_
