// CallMemory: the system calls last seen for a few threads, so that a thread found in
// restart_syscall is decoded as the call it restarted.
//
// A wait with a timeout (pthread_mutex_timedlock, pthread_cond_timedwait, sem_timedwait,
// nanosleep, Python's acquire(timeout=) and time.sleep(), poll on x86_64) that a stop
// interrupts (SIGSTOP then SIGCONT: Ctrl-Z and fg; a debugger or `hangwatch snapshot`
// attaching) resumes as restart_syscall: its /proc syscall line then keeps the call's arguments
// and deadline but not its number. The call seen for the same thread with the same arguments
// (an earlier sample of the hang) is that call; else the thread's kernel wait tells it
// (TellRestartedCall). Fixed storage, no allocation: the watchdog thread's rules.
#ifndef HANGWATCH_CAUSE_CALL_MEMORY_H_
#define HANGWATCH_CAUSE_CALL_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "unwind/proc_files.h"

namespace hangwatch::cause {

// How Resolve told a thread's call.
enum class RestartTold : uint8_t {
  kNotRestarted = 0,  // the line is the call itself (or no call)
  kSeenBefore,        // restart_syscall, told from the call last seen with the same arguments
  kKernelWait,        // restart_syscall, told from the thread's kernel wait and arguments
  kUnknown,           // restart_syscall that nothing tells: left as it is
};

class CallMemory {
 public:
  // `sys`: the syscall line just read of thread `tid` of this process. A call that is not a
  // restart is remembered (the oldest thread's entry makes room); a restart_syscall takes the
  // number of the call remembered for `tid` when its arguments are the same, else the one its
  // kernel wait tells. Returns how.
  RestartTold Resolve(pid_t tid, unwind::TaskSyscall* sys);
  // Forgets every call (a new hang: the threads have moved on).
  void Forget();

 private:
  struct Seen {
    pid_t tid = 0;
    int64_t nr = -1;
    uint64_t args[6] = {};
  };
  static constexpr size_t kThreads = 8;  // the main thread and a chain of lock owners
  Seen seen_[kThreads];
  size_t next_ = 0;
};

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_CALL_MEMORY_H_
