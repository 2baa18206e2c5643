// Mach run states (thread_basic_info::run_state) as the one-letter scheduler states that
// CaptureBuffer::sched_state uses on every platform (the letters of /proc/PID/task/TID/stat).
//
// Portable on purpose: the values are mirrored from <mach/thread_info.h> so that the mapping is
// unit-tested on Linux; mach_sampler.cc checks them against the real header.
#ifndef HANGWATCH_UNWIND_MACH_RUN_STATE_H_
#define HANGWATCH_UNWIND_MACH_RUN_STATE_H_

#include <cstdint>

namespace hangwatch::unwind::mach {

inline constexpr int kThStateRunning = 1;          // TH_STATE_RUNNING
inline constexpr int kThStateStopped = 2;          // TH_STATE_STOPPED
inline constexpr int kThStateWaiting = 3;          // TH_STATE_WAITING
inline constexpr int kThStateUninterruptible = 4;  // TH_STATE_UNINTERRUPTIBLE
inline constexpr int kThStateHalted = 5;           // TH_STATE_HALTED
inline constexpr int kThFlagsIdle = 0x2;           // TH_FLAGS_IDLE: the idle thread

// 'R' running, 'S' waiting (interruptibly), 'D' uninterruptible wait, 'T' stopped, 'X' halted
// (terminating), 'I' an idle thread; '?' for anything this table does not know.
constexpr char SchedStateFromRunState(int run_state, int flags) {
  if ((flags & kThFlagsIdle) != 0) return 'I';
  switch (run_state) {
    case kThStateRunning:
      return 'R';
    case kThStateStopped:
      return 'T';
    case kThStateWaiting:
      return 'S';
    case kThStateUninterruptible:
      return 'D';
    case kThStateHalted:
      return 'X';
    default:
      return '?';
  }
}

}  // namespace hangwatch::unwind::mach

#endif  // HANGWATCH_UNWIND_MACH_RUN_STATE_H_
