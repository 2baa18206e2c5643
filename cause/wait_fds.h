// The descriptors a thread waits on in poll/ppoll, select/pselect6 or epoll_wait/epoll_pwait/
// epoll_pwait2, from its system call's arguments (/proc/PID/task/TID/syscall, parsed by
// unwind/proc_files.h), each described by cause/fd_peer.h: the pollfd array and fd_sets are
// copied out of the thread's memory with process_vm_readv (never dereferenced: a bad pointer is
// an error, not a fault), an epoll's interest list is read from /proc/PID/fdinfo/EPFD.
//
// A wait with no descriptor (poll(NULL, 0, ms), select(0, ...)) is a sleep: `total` 0.
// Same rules as fd_peer.h: watchdog thread, allocation-free after the caller allocated one
// WaitFdsScratch, bounded. Linux only.
#ifndef HANGWATCH_CAUSE_WAIT_FDS_H_
#define HANGWATCH_CAUSE_WAIT_FDS_H_

#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "cause/fd_peer.h"
#include "unwind/proc_files.h"

namespace hangwatch::cause {

enum class WaitCall : uint8_t {
  kNone,    // not a descriptor wait
  kPoll,    // poll, ppoll
  kSelect,  // select, pselect6
  kEpoll,   // epoll_wait, epoll_pwait, epoll_pwait2
};

// "poll", "select", "epoll_wait"; "" for kNone.
const char* WaitCallName(WaitCall call);

// Which wait system call number `nr` is (this architecture's numbering).
WaitCall ClassifyWaitCall(int64_t nr);

// One descriptor waited on.
struct WaitFd {
  int32_t fd = -1;
  uint32_t events = 0;  // poll: the pollfd events; select: POLLIN (read set), POLLOUT (write
                        // set), POLLPRI (except set), or'ed; epoll: the registered EPOLL* mask
};

inline constexpr size_t kMaxWaitFds = 8;

struct WaitFds {
  WaitCall call = WaitCall::kNone;
  int32_t epoll_fd = -1;    // epoll: the epoll descriptor
  uint32_t total = 0;       // descriptors waited on (negative pollfds not counted)
  uint32_t count = 0;       // entries of `fds` / `described` filled (at most kMaxWaitFds)
  int64_t timeout_ms = -2;  // -1: no timeout; -2: unknown
  int error = 0;            // errno when the arguments could not be read (then total is 0
                            // and count 0: not a sleep)
  WaitFd fds[kMaxWaitFds];
  FdDescription described[kMaxWaitFds];  // described[i] is fds[i]
};

// Memory for DescribeWaitFds, allocated once (about 70 KiB); one call at a time.
struct WaitFdsScratch {
  FdPeerScratch peer;
  char fdinfo[16384];
  pollfd polls[256];
  uint64_t fd_set_bits[3][1024 / 64];
};

// The descriptors of the wait `call` of a thread of process `pid` (0: this process). False
// (out->call kNone) when `call` is not a descriptor wait; false with out->error set when its
// arguments could not be read.
bool DescribeWaitFds(pid_t pid, const unwind::TaskSyscall& call, const ScanBudget& budget,
                     WaitFdsScratch* scratch, WaitFds* out);

// "poll on 2 descriptors (timeout none): fd 5: pipe:[...]...; fd 7: ..." or "poll with no
// descriptors for 1000 ms" into buf (NUL-terminated, cut to n). Returns the length.
size_t FormatSummary(const WaitFds& w, char* buf, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_WAIT_FDS_H_
