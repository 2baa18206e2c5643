// The child a wait4 / waitid waits for: its pid, name (comm) and scheduler state, from
// /proc/PID/stat. A wait for any child (pid -1, P_ALL) or a process group names the first child
// of the waiting thread (/proc/self/task/TID/children) when the kernel lists them.
// libc only, no allocation; reads /proc: the watchdog thread.
#ifndef HANGWATCH_CAUSE_CHILD_WAIT_H_
#define HANGWATCH_CAUSE_CHILD_WAIT_H_

#include <sys/types.h>

#include <cstdint>

#include "cause/syscall_decode.h"

namespace hangwatch::cause {

struct ChildInfo {
  pid_t pid = 0;  // 0 when unknown
  char name[16] = {};
  char state = '?';
  bool any = false;  // the wait was for any child (or a group): pid is one of them
};

// `w.wait` must be kChild; `waiter` is the thread that waits.
ChildInfo ResolveChildWait(pid_t waiter, const DecodedWait& w);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_CHILD_WAIT_H_
