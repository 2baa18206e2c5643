// FindMapping reads /proc/PID/maps with unwind::ReadMaps; ColdFileMappings asks mincore about
// each file mapping of this process in chunks of FaultScratch::residency pages.
#include "cause/fault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "unwind/proc_files.h"

namespace hangwatch::cause {
namespace {

void FromLine(const unwind::MapsLine& line, MappingInfo* out) {
  *out = MappingInfo{};
  out->found = true;
  out->lo = line.lo;
  out->hi = line.hi;
  out->offset = line.offset;
  out->inode = line.inode;
  const size_t np = line.perms_size < 4 ? line.perms_size : 4;
  std::memcpy(out->perms, line.perms, np);
  const size_t n = line.path_size < sizeof out->path - 1 ? line.path_size : sizeof out->path - 1;
  std::memcpy(out->path, line.path, n);
  out->path[n] = '\0';
}

// Pages of [lo, hi) not resident, examined up to *budget pages (decremented).
uint64_t MissingPages(uint64_t lo, uint64_t hi, uint64_t page, FaultScratch* s, uint64_t* budget,
                      bool* cut) {
  uint64_t missing = 0;
  for (uint64_t at = lo; at < hi;) {
    if (*budget == 0) {
      *cut = true;
      break;
    }
    uint64_t pages = (hi - at) / page;
    if (pages > sizeof s->residency) pages = sizeof s->residency;
    if (pages > *budget) pages = *budget;
    if (mincore(reinterpret_cast<void*>(at), pages * page, s->residency) != 0) break;
    for (uint64_t i = 0; i < pages; ++i) missing += (s->residency[i] & 1) == 0;
    *budget -= pages;
    at += pages * page;
  }
  return missing;
}

}  // namespace

bool FindMapping(pid_t pid, uint64_t addr, FaultScratch* scratch, MappingInfo* out) {
  *out = MappingInfo{};
  unwind::ReadMaps(pid, scratch->maps, sizeof scratch->maps, [&](const unwind::MapsLine& line) {
    if (!out->found && addr >= line.lo && addr < line.hi) FromLine(line, out);
  });
  return out->found;
}

void ColdFileMappings(uint64_t max_pages, FaultScratch* scratch, ColdMappings* out) {
  *out = ColdMappings{};
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t budget = max_pages;
  bool cut = false;
  unwind::ReadMaps(0, scratch->maps, sizeof scratch->maps, [&](const unwind::MapsLine& line) {
    if (line.inode == 0 || line.path_size == 0 || line.path[0] != '/') return;
    ++out->file_mappings;
    const uint64_t missing = MissingPages(line.lo, line.hi, page, scratch, &budget, &cut);
    if (missing == 0) return;
    // Insert in order, most missing first, dropping the last when full.
    uint32_t at = out->count;
    while (at > 0 && out->mappings[at - 1].pages_missing < missing) --at;
    if (at >= kMaxColdMappings) return;
    const uint32_t keep = out->count < kMaxColdMappings ? out->count : kMaxColdMappings - 1;
    for (uint32_t i = keep; i > at; --i) out->mappings[i] = out->mappings[i - 1];
    FromLine(line, &out->mappings[at]);
    out->mappings[at].pages = (line.hi - line.lo) / page;
    out->mappings[at].pages_missing = missing;
    if (out->count < kMaxColdMappings) ++out->count;
  });
  out->complete = !cut;
}

size_t FormatFaultSummary(uint64_t major_faults, const MappingInfo* where, char* buf, size_t n) {
  if (n == 0) return 0;
  int len;
  const unsigned long long count = major_faults;
  const char* s = major_faults == 1 ? "" : "s";
  if (where == nullptr || !where->found) {
    len = std::snprintf(buf, n, "%llu major fault%s (mapping unknown)", count, s);
  } else if (where->pages > 0) {
    len = std::snprintf(
        buf, n,
        "%llu major fault%s in %s (mapping 0x%llx-0x%llx, %llu of %llu pages not in memory)", count,
        s, where->path[0] != '\0' ? where->path : "anonymous memory",
        static_cast<unsigned long long>(where->lo), static_cast<unsigned long long>(where->hi),
        static_cast<unsigned long long>(where->pages_missing),
        static_cast<unsigned long long>(where->pages));
  } else {
    len = std::snprintf(buf, n, "%llu major fault%s in %s (mapping 0x%llx-0x%llx)", count, s,
                        where->path[0] != '\0' ? where->path : "anonymous memory",
                        static_cast<unsigned long long>(where->lo),
                        static_cast<unsigned long long>(where->hi));
  }
  if (len < 0) return 0;
  return static_cast<size_t>(len) < n ? static_cast<size_t>(len) : n - 1;
}

}  // namespace hangwatch::cause
