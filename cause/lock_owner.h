// Who holds the lock a thread waits for: from a futex wait's address, operation and expected
// value (syscall_decode.h), the glibc lock around that address is read (with ReadProcess: guarded,
// never dereferenced) and recognized, and its owner's thread id taken from the lock itself:
//
//   pthread_mutex_t (normal, recursive, error-checking, adaptive; std::mutex,
//   std::recursive_mutex)              __owner, when the waiter waits on __lock for value 2
//   robust mutex                       the tid in __lock (FUTEX_TID_MASK)
//   priority-inheritance mutex         the tid in __lock: FUTEX_LOCK_PI is the kernel's contract
//   pthread_rwlock_t (std::shared_mutex) held for writing: __cur_writer
//   condition variable, semaphore      no owner (a semaphore is what Python's threading.Lock is)
//
// The layouts are glibc's on 64-bit Linux (x86_64, aarch64; condition variables as of 2.25). Any
// other C library, or memory that does not look like one of those locks, gives kUnknown with no
// owner: never a wrong thread. An owner is kept only when it is a thread of this process
// (the kernel's tgkill check) and the lock still names it when read a second time; an owner that
// let go between the two reads is read once more, then given up (owner 0).
//
// Chains: the owner may itself wait for a lock; FollowChain walks up to kMaxChain owners and
// stops at a thread it has already seen: a deadlock, every thread of the cycle with the lock it
// holds and the one it wants.
//
// Linux, libc only, no allocation; reads /proc, so not for the capture path: the watchdog thread.
#ifndef HANGWATCH_CAUSE_LOCK_OWNER_H_
#define HANGWATCH_CAUSE_LOCK_OWNER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "cause/syscall_decode.h"

namespace hangwatch::cause {

enum class LockType : uint8_t {
  kUnknown = 0,
  kMutex,           // PTHREAD_MUTEX_NORMAL / TIMED (std::mutex)
  kRecursiveMutex,  // std::recursive_mutex
  kErrorCheckMutex,
  kAdaptiveMutex,
  kRobustMutex,
  kPiMutex,
  kRwlock,             // held for writing (std::shared_mutex's lock())
  kConditionVariable,  // no owner
  kSemaphore,          // no owner (Python's threading.Lock)
};
// "mutex", "recursive mutex", "error-checking mutex", "adaptive mutex", "robust mutex",
// "priority-inheritance mutex", "rwlock", "condition variable", "semaphore", "futex".
const char* LockTypeName(LockType t);
// "mutex", "recursive_mutex", ... "semaphore", "unknown": the names of the JSON format.
const char* LockTypeKey(LockType t);

struct LockInfo {
  uint64_t addr = 0;  // the lock object's address (the mutex, rwlock, condvar, semaphore)
  LockType type = LockType::kUnknown;
  pid_t owner = 0;              // thread of this process holding it; 0 when none or unknown
  bool owner_released = false;  // an owner was seen but let go while being read
};

// The lock behind a futex wait of a thread of this process. `w.wait` must be kFutex.
LockInfo ResolveFutexWait(const DecodedWait& w);

// The same for a thread of another process `pid` (0: this one), its lock words read with
// process_vm_readv from that process (`hangwatch snapshot`: the caller may ptrace it), and the
// owner checked to be a thread of `pid`. `w` must come from DecodeWaitOf(pid, ...).
LockInfo ResolveFutexWaitOf(pid_t pid, const DecodedWait& w);

// True when `tid` is a thread of process `pid` (0: this one), by tgkill with signal 0.
bool IsThreadOf(pid_t pid, pid_t tid);

// True when `tid` is a thread of this process (tgkill with signal 0: the kernel's own check
// that the thread is in this thread group).
bool IsThreadOfThisProcess(pid_t tid);

// The thread's name (comm) into out (NUL-terminated, at most 15 characters + NUL); false when
// unreadable ("" then).
bool ReadThreadName(pid_t tid, char* out, size_t size);

// The system call thread `tid` of this process sleeps in (its syscall line, decoded); wait
// kUnknown when it runs, when the line is unreadable, or when it is an emulator's host line
// (unwind::ProcSyscallLinesAreOurs). *sp (when not null) gets its stack pointer. A thread in
// restart_syscall is decoded as the call it restarted when its kernel wait tells
// (TellRestartedCall).
DecodedWait ReadThreadWait(pid_t tid, uint64_t* sp = nullptr, char* state = nullptr);

inline constexpr int kMaxChain = 4;

// One thread on the other side of a wait.
struct ChainLink {
  pid_t tid = 0;
  char name[16] = {};
  char state = '?';  // scheduler state letter when read
  uint64_t sp = 0;   // its stack pointer, when asleep in a system call
  DecodedWait wait;  // the system call it sleeps in (kUnknown: running, or unknown)
  LockInfo wants;    // the lock it waits for, when wait is a futex (type kUnknown otherwise)
};

struct WaitChain {
  LockInfo first;              // the lock the waiter wants
  int length = 0;              // links used
  ChainLink links[kMaxChain];  // links[0] owns `first`; links[i+1] owns links[i].wants
  // A cycle: the last link's wanted lock is owned by `waiter` (cycle_from = -1) or by
  // links[cycle_from]. Every thread from there on (and the waiter when -1) is deadlocked.
  bool deadlock = false;
  int cycle_from = -1;
  bool truncated = false;  // the chain went on past kMaxChain
};

// How FollowChain learns what an owner does: link->tid is set; ReadLink fills name, state, sp
// and wait (the system call it sleeps in). The default reads /proc (ReadThreadName,
// ReadThreadWait); the agent's reads them from its capture of the owner, made anyway for its
// stack, so that each owner is read once per sample.
class ChainReader {
 public:
  virtual ~ChainReader() = default;
  virtual void ReadLink(int index, ChainLink* link) = 0;
};

// Follows the owners from the lock `first` that thread `waiter` wants. `reader` null: /proc.
void FollowChain(pid_t waiter, const LockInfo& first, WaitChain* out,
                 ChainReader* reader = nullptr);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_LOCK_OWNER_H_
