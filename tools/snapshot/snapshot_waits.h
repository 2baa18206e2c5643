// What each thread of a snapshot's target waits for, and the wait-for graph between them: the
// same decoding as the agent's cause attribution (cause/syscall_decode.h, cause/lock_owner.h),
// pointed at another process. Each thread's /proc/PID/task/TID/syscall line is decoded; a futex
// wait's lock is read from the target's memory (process_vm_readv) and its owner named. An edge
// "thread A waits for a lock held by thread B" per owned lock; a cycle of edges is a deadlock.
//
// The lines are read after the snapshot's stop, but the stop turns every wait with a timeout
// (pthread_mutex_timedlock, pthread_cond_timedwait, sem_timedwait, nanosleep, poll) into
// restart_syscall, which keeps the call's arguments and deadline but not its number. Such a
// thread is decoded as the call read before the stop (PtraceThread::syscall_before) or, on
// x86_64, the number in its registers at the stop; when both already said restart_syscall (a
// thread an earlier snapshot or stop restarted), as the call its kernel wait (wchan) and
// arguments tell (cause::TellRestartedCall); else it is said to be a restarted call.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_
#define HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "cause/lock_owner.h"
#include "cause/syscall_decode.h"
#include "unwind/proc_files.h"

namespace hangwatch::tools {

// How the call of a thread found in restart_syscall was told.
enum class Restart : uint8_t {
  kNo = 0,      // not restarted: the call is the one the thread sleeps in
  kKnown,       // the call read before the stop (or in the registers at the stop)
  kKernelWait,  // not read before its restart (restarted before this snapshot, or entered
                // between the read and the stop): told from its kernel wait and arguments
  kUnknown,     // a restarted call nothing tells: shown as restart_syscall
};
const char* RestartName(Restart r);  // "known", "kernel_wait", "unknown"; "" for kNo

struct ThreadWait {
  pid_t tid = 0;
  std::string name;
  bool in_syscall = false;  // asleep in a system call (else running, or unreadable)
  std::string call;         // "futex(0x55b7c0, WAIT)", "nanosleep(...)" when in_syscall
  cause::DecodedWait wait;
  cause::LockInfo lock;  // the lock behind a futex wait (type kUnknown otherwise)
  Restart restart = Restart::kNo;
  // A lock of the program's runtime the thread waits for, in words ("Java monitor (a
  // java.lang.Object)": tools/snapshot/snapshot_java.h); then lock.addr is that lock's address
  // and lock.owner the thread holding it (0: unknown), whatever the system call.
  std::string runtime_lock;
};

struct SnapshotWaits {
  std::map<pid_t, ThreadWait> threads;  // by tid
  // Every deadlock: the threads of one cycle, each waiting for a lock held by the next (the
  // last for one held by the first), starting from the lowest tid.
  std::vector<std::vector<pid_t>> deadlocks;
};

// A thread to read: its tid, name, scheduler state and system call before the snapshot stopped
// it, and the call number in its registers at the stop (-1: none or unknown; x86_64 only).
struct WaitQuery {
  pid_t tid = 0;
  std::string name;
  char state = '?';
  unwind::TaskSyscall before;
  int64_t stop_nr = -1;
};

// The call to decode for a thread whose line after the stop is `after`: `after` itself unless
// it is restart_syscall; then `before` when it is the same call (same arguments), else the call
// number of the stop (`stop_nr`), else nothing tells (kUnknown: the caller may still ask the
// thread's kernel wait). *restart says which.
unwind::TaskSyscall ChooseCall(const unwind::TaskSyscall& before, int64_t stop_nr,
                               const unwind::TaskSyscall& after, Restart* restart);

// Reads the waits of threads `threads` of process `pid`. A thread that was asleep (S, D) but
// reads as running (it is restarting its system call after the snapshot's stop) is read again a
// few times, 2 ms apart; a running one is read once. A thread that sleeps in restart_syscall
// is decoded as ChooseCall says.
SnapshotWaits ReadSnapshotWaits(pid_t pid, const std::vector<WaitQuery>& threads);

// Finds the deadlocks of `waits` again (after runtime locks were added to it).
void FindDeadlocks(SnapshotWaits* waits);

// One line for a thread: "waiting for mutex 0x55b7c0 held by thread 1636 \"db-writer\"",
// "waiting on condition variable 0x... (no owner: any thread may signal it)",
// "sleeping in nanosleep(...), asked for 3.000 s", "in read(fd 5, ...)", or "" when it runs.
std::string WaitLine(const SnapshotWaits& waits, const ThreadWait& t);

// The edges of the wait-for graph, one line each ("thread 12 \"a\" -> thread 13 \"b\" (mutex
// 0x...)"), and one line per deadlock, in the words of the report's deadlock cause.
std::vector<std::string> WaitGraphLines(const SnapshotWaits& waits);
std::string DeadlockLine(const SnapshotWaits& waits, const std::vector<pid_t>& cycle);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_
