// Where major page faults fell (cause fault). The faulting data address of a thread blocked in
// a fault is not published by /proc (its syscall line gives only the pc and sp), so what is
// knowable is:
//   1. the mapping containing a known address: the sampled pc (a fault on cold code of a
//      mapped binary) or any address the caller has, via /proc/PID/maps;
//   2. for this process, the file-backed mappings that still have pages out of memory
//      (mincore): the candidates for the faults of a hang in progress. A mapping read cold
//      during the hang is resident afterwards, so this list is taken while the hang is on.
// Watchdog thread; libc and unwind/proc_files.h only; caller-provided buffers, bounded
// (mappings and pages examined), no allocation. Linux only.
#ifndef HANGWATCH_CAUSE_FAULT_H_
#define HANGWATCH_CAUSE_FAULT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace hangwatch::cause {

struct MappingInfo {
  bool found = false;
  uint64_t lo = 0, hi = 0;  // the mapping's range
  uint64_t offset = 0;      // file offset of lo
  uint64_t inode = 0;       // 0: anonymous
  char perms[5] = {};       // "r--s"
  char path[256] = {};      // file path, "[heap]", "" for anonymous; cut to fit
  // mincore (this process only; ColdFileMappings): pages of the mapping and how many are
  // not in memory.
  uint64_t pages = 0;
  uint64_t pages_missing = 0;
};

// Memory for the maps reads and mincore, allocated once.
struct FaultScratch {
  char maps[4352];
  unsigned char residency[4096];  // mincore vector, one chunk at a time
};

// The mapping of process `pid` (0: this one) containing `addr`. False when none or maps is
// unreadable.
bool FindMapping(pid_t pid, uint64_t addr, FaultScratch* scratch, MappingInfo* out);

inline constexpr size_t kMaxColdMappings = 4;

struct ColdMappings {
  MappingInfo mappings[kMaxColdMappings];  // the file mappings with the most pages missing
  uint32_t count = 0;
  uint32_t file_mappings = 0;  // file-backed mappings examined
  bool complete = true;        // false: the page bound cut the scan
};

// This process's file-backed mappings with pages not in memory, most missing first, examining
// at most `max_pages` pages in all (mincore; cheap: no page is touched).
void ColdFileMappings(uint64_t max_pages, FaultScratch* scratch, ColdMappings* out);

// "12 major faults in /data/big.bin (mapping 0x7f..-0x7f.., 2048 of 4096 pages not in memory)"
// or "12 major faults (mapping unknown)". Returns the length.
size_t FormatFaultSummary(uint64_t major_faults, const MappingInfo* where, char* buf, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_FAULT_H_
