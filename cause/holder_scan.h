// Which processes hold a given open file: a pipe, a socket or a FIFO, found by reading the
// links of /proc/PID/fd/* (the text "pipe:[INODE]", "socket:[INODE]" or a FIFO's path), the
// process being watched first, then every process, within a ScanBudget.
//
// Several files are looked for in one pass (the descriptors of one poll, say), each with its own
// list of holders. A process whose fd directory cannot be read (another user's, without root)
// is counted in ScanStats::unreadable and skipped. Directories are listed with getdents64 into
// a caller buffer: nothing here allocates. Linux only; not for a signal handler.
#ifndef HANGWATCH_CAUSE_HOLDER_SCAN_H_
#define HANGWATCH_CAUSE_HOLDER_SCAN_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "cause/scan_budget.h"

namespace hangwatch::cause {

// One process holding the file.
struct PeerProcess {
  int32_t pid = 0;     // the process (thread group) id
  int32_t fd = -1;     // the first of its descriptors found on the file
  char name[16] = {};  // its comm, NUL-terminated ("" when it could not be read)
};

inline constexpr size_t kMaxPeers = 4;

// The holders of one file.
struct PeerList {
  PeerProcess peers[kMaxPeers];
  uint8_t count = 0;       // entries of `peers` used
  bool truncated = false;  // more processes held it than kMaxPeers
};

// One file looked for.
struct HolderQuery {
  const char* link = nullptr;  // the exact link text: "pipe:[123]", "socket:[77]", a FIFO path
  size_t link_size = 0;
  pid_t exclude_pid = 0;    // this descriptor of this process is the waiting one: not a peer
  int exclude_fd = -1;      // (exclude_pid: a real pid, not 0)
  PeerList* out = nullptr;  // filled; must be empty on entry
  // Stop looking for this file at its first holder: a connected socket's peer is held by one
  // process (or by a family of forked ones); a pipe's other end may be held by a parent that
  // did not close it as well as by the real writer, so pipes look for every holder.
  bool first_holder_enough = false;
};

// Memory for one scan, allocated once by the caller.
struct HolderScanBuffers {
  alignas(8) char proc_dents[4096];  // getdents64 records of /proc
  alignas(8) char fd_dents[8192];    // getdents64 records of one /proc/PID/fd
  char link[512];                    // one readlink result
};

// Looks for every query's file in the fd directories of `first_pid` (0: this process), then of
// every process in /proc. Stops early when every query has its holders (kMaxPeers, or one when
// first_holder_enough) or a bound of `budget` is reached. Returns what it went through.
ScanStats FindHolders(pid_t first_pid, HolderQuery* queries, size_t query_count,
                      const ScanBudget& budget, HolderScanBuffers* buffers);

// Where the holders of recently looked-for files were found, so that the next samples of the
// same hang check them (one readlink each) instead of scanning /proc again: the full scan costs
// milliseconds on a machine with a hundred processes (bench/cause_bench.cc). Only complete
// scans that found holders are kept. A process that started holding the file after the scan is
// not seen until Clear(): clear it when a hang starts. Fixed size, no allocation.
class HolderCache {
 public:
  // Fills *q.out from the cache when every remembered holder still holds the file, and returns
  // true; false (q.out untouched, the entry dropped) otherwise.
  bool Lookup(const HolderQuery& q, HolderScanBuffers* buffers, ScanStats* stats);
  // Remembers the holders found for q (q.out) by a scan that went through `stats`.
  void Store(const HolderQuery& q, const ScanStats& stats);
  void Clear();

 private:
  struct Entry {
    bool used = false;
    char link[256] = {};
    size_t link_size = 0;
    PeerList peers;
    ScanStats stats;
  };
  Entry entries_[8];
  uint32_t next_ = 0;
};

// The comm of process `pid` into name (16 bytes, NUL-terminated; "" when unreadable).
void ReadProcessName(pid_t pid, char (&name)[16]);

// Monotonic clock in nanoseconds.
int64_t MonotonicNs();

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_HOLDER_SCAN_H_
