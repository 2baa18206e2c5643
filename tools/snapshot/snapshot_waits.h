// What each thread of a snapshot's target waits for, and the wait-for graph between them: the
// same decoding as the agent's cause attribution (cause/syscall_decode.h, cause/lock_owner.h),
// pointed at another process. Each thread's /proc/PID/task/TID/syscall line is decoded; a futex
// wait's lock is read from the target's memory (process_vm_readv) and its owner named. An edge
// "thread A waits for a lock held by thread B" per owned lock; a cycle of edges is a deadlock.
#ifndef HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_
#define HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "cause/lock_owner.h"
#include "cause/syscall_decode.h"

namespace hangwatch::tools {

struct ThreadWait {
  pid_t tid = 0;
  std::string name;
  bool in_syscall = false;  // asleep in a system call (else running, or unreadable)
  std::string call;         // "futex(0x55b7c0, WAIT)", "nanosleep(...)" when in_syscall
  cause::DecodedWait wait;
  cause::LockInfo lock;  // the lock behind a futex wait (type kUnknown otherwise)
};

struct SnapshotWaits {
  std::map<pid_t, ThreadWait> threads;  // by tid
  // Every deadlock: the threads of one cycle, each waiting for a lock held by the next (the
  // last for one held by the first), starting from the lowest tid.
  std::vector<std::vector<pid_t>> deadlocks;
};

// A thread to read: its tid, name and scheduler state before the snapshot stopped it.
struct WaitQuery {
  pid_t tid = 0;
  std::string name;
  char state = '?';
};

// Reads the waits of threads `threads` of process `pid`. A thread that was asleep (S, D) but
// reads as running (it is restarting its system call after the snapshot's stop) is read again a
// few times, 2 ms apart; a running one is read once.
SnapshotWaits ReadSnapshotWaits(pid_t pid, const std::vector<WaitQuery>& threads);

// One line for a thread: "waiting for mutex 0x55b7c0 held by thread 1636 \"db-writer\"",
// "waiting on condition variable 0x... (no owner: any thread may signal it)",
// "in nanosleep(...)", or "" when it runs.
std::string WaitLine(const SnapshotWaits& waits, const ThreadWait& t);

// The edges of the wait-for graph, one line each ("thread 12 \"a\" -> thread 13 \"b\" (mutex
// 0x...)"), and one line per deadlock, in the words of the report's deadlock cause.
std::vector<std::string> WaitGraphLines(const SnapshotWaits& waits);
std::string DeadlockLine(const SnapshotWaits& waits, const std::vector<pid_t>& cycle);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_SNAPSHOT_WAITS_H_
