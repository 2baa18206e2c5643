// Bounds on the /proc and netlink scans of cause/: a resolver stops at the first bound reached
// and says so (`complete` false), so a machine with a hundred thousand descriptors costs a
// hang report milliseconds, never seconds.
#ifndef HANGWATCH_CAUSE_SCAN_BUDGET_H_
#define HANGWATCH_CAUSE_SCAN_BUDGET_H_

#include <cstdint>

namespace hangwatch::cause {

struct ScanBudget {
  uint32_t max_processes = 4096;     // /proc/PID directories opened
  uint32_t max_descriptors = 65536;  // /proc/PID/fd entries read (readlink)
  uint32_t max_sockets = 65536;      // sock_diag messages read in one dump
  int64_t max_ns = 50'000'000;       // wall time of one call (50 ms)
};

// What a scan went through, and whether it finished.
struct ScanStats {
  uint32_t processes = 0;    // /proc/PID/fd directories read
  uint32_t unreadable = 0;   // /proc/PID/fd directories that could not be opened (EACCES...)
  uint32_t descriptors = 0;  // descriptors looked at
  bool complete = true;      // false: a bound of ScanBudget stopped it
  bool cached = false;       // the holders came from HolderCache (verified, not rescanned)
};

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_SCAN_BUDGET_H_
