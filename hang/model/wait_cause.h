// WaitCause: why one blocked sample of the main thread waited, in fixed-size storage (no
// pointers, no allocation: copied by value into the hang, the ring and the open-hang file).
// Filled on the watchdog thread by a WaitCauseProbe (agent/samplers/wait_cause_probe.h; Linux:
// cause/) and turned into the public hangwatch::Cause (hang_record.h) by materialize.cc.
//
// It has room for every kind, including those whose resolvers fill descriptors' peers (io, ipc)
// and scheduler figures (starved, throttled, pressure): a resolver's result is copied into the
// fields of its kind.
#ifndef HANGWATCH_HANG_MODEL_WAIT_CAUSE_H_
#define HANGWATCH_HANG_MODEL_WAIT_CAUSE_H_

#include <cstddef>
#include <cstdint>

#include "hangwatch/hang_record.h"

namespace hangwatch::agent {

inline constexpr size_t kCauseMaxThreads = 4;  // links of a chain of lock owners
inline constexpr size_t kCauseMaxFrames = 48;  // frames kept of each such thread
inline constexpr size_t kCauseMaxFds = 8;
inline constexpr size_t kCauseMaxPeers = 4;

// A lock's type: the values of cause::LockType (cause/lock_owner.h, which checks that they
// agree), named here so that the portable agent code can print them.
inline constexpr const char* kWaitLockKeys[] = {
    "unknown",      "mutex",    "recursive_mutex", "errorcheck_mutex",   "adaptive_mutex",
    "robust_mutex", "pi_mutex", "rwlock",          "condition_variable", "semaphore"};
inline constexpr const char* kWaitLockNames[] = {"futex",
                                                 "mutex",
                                                 "recursive mutex",
                                                 "error-checking mutex",
                                                 "adaptive mutex",
                                                 "robust mutex",
                                                 "priority-inheritance mutex",
                                                 "rwlock",
                                                 "condition variable",
                                                 "semaphore"};
inline constexpr uint8_t kWaitLockTypes = sizeof(kWaitLockKeys) / sizeof(kWaitLockKeys[0]);
inline constexpr uint8_t kWaitLockConditionVariable = 8;
inline constexpr uint8_t kWaitLockSemaphore = 9;

// A lock: its type (cause::LockType's value; 0 unknown) and address.
struct WaitLock {
  uint8_t type = 0;
  uint64_t addr = 0;
  const char* key() const { return kWaitLockKeys[type < kWaitLockTypes ? type : 0]; }
  const char* name() const { return kWaitLockNames[type < kWaitLockTypes ? type : 0]; }
};

// A system call a thread sleeps in: number, arguments and how it prints (nr -1: none /
// running; text "" then).
struct WaitCall {
  int64_t nr = -1;
  uint64_t args[6] = {};
  char text[96] = {};  // "read(fd 5, buf 0x7ffd..., count 4096)"
};

// A thread of this process on the other side of a wait, with its stack of the same sample.
struct WaitThread {
  int32_t tid = 0;
  char name[16] = {};
  char state = '?';
  WaitCall call;
  WaitLock wants;
  uint32_t num_frames = 0;
  uintptr_t frames[kCauseMaxFrames] = {};
  FrameMethod methods[kCauseMaxFrames] = {};
};

struct WaitProcess {
  int32_t pid = 0;
  char name[16] = {};
  char state = '?';
};

struct WaitCause {
  CauseKind kind = CauseKind::kNone;
  WaitCall call;  // the main thread's system call
  // The stack table id of the main thread's stack in the sample (-1 none): its frames in a
  // deadlock cycle.
  int32_t main_stack = -1;
  char main_name[16] = {};

  // lock, deadlock: the lock the main thread wants, then its owner, the owner's wanted lock's
  // owner, ... (threads[0] owns `lock`, threads[i + 1] owns threads[i].wants).
  WaitLock lock;
  bool owner_released = false;  // an owner let go while it was read
  uint8_t num_threads = 0;
  bool chain_truncated = false;
  // deadlock: the cycle starts at threads[cycle_from], or at the main thread when -1.
  int8_t cycle_from = -1;
  WaitThread threads[kCauseMaxThreads];

  // child
  WaitProcess child;
  bool child_any = false;
  // sleep
  uint64_t sleep_ns = 0;
  bool sleep_forever = false;

  // io, fault, ipc
  char path[256] = {};
  char wchan[64] = {};
  char kernel_stack[256] = {};  // io: "request_wait_answer <- fuse_simple_request <- ..." (root)
  uint64_t major_faults = 0;
  char mapping[128] = {};
  int32_t fds[kCauseMaxFds] = {};
  uint8_t num_fds = 0;
  WaitProcess peers[kCauseMaxPeers];
  uint8_t num_peers = 0;
  char local_address[64] = {};
  char remote_address[64] = {};

  // starved, throttled, pressure
  uint64_t run_delay_ns = 0;
  uint32_t runnable_threads = 0;
  uint64_t throttled_ns = 0;
  uint64_t nr_throttled = 0;
  char pressure_resource[8] = {};
  uint32_t pressure_some_avg10_centi = 0;  // percent x 100
  uint32_t pressure_full_avg10_centi = 0;

  // The owner the sample waited for (for the timeline), 0 when none.
  int32_t owner_tid() const { return num_threads > 0 ? threads[0].tid : 0; }
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_WAIT_CAUSE_H_
