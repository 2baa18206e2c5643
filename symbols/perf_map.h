// PerfMap: names of JIT-compiled code from the /tmp/perf-PID.map that runtimes write for perf
// (node --perf-basic-prof, CPython 3.12 -X perf, the JVM's perf-map-agent, .NET with
// DOTNET_PerfMapEnabled=1). One line per code object: "START SIZE NAME", START and SIZE in hex
// (with or without 0x).
//
// The file only grows, so Refresh() reads what was appended since the last call, complete lines
// only, at most `max_read_bytes` per call (the rest is read by the next calls). A later entry
// replaces the earlier ones it overlaps (code freed and the memory reused). Lines that do not
// parse are skipped; a file that is not a regular file owned by this process's user is not read
// (/tmp is shared; a FIFO or a device planted there is refused without blocking, see
// regular_file.h); a file that vanished leaves the names read so far; a file that shrank or
// was replaced (another inode, or other first bytes) is read again from the start. At most
// `max_entries` are kept (the oldest dropped). Never used on the capture path (it reads files and
// allocates); thread-safe.
#ifndef HANGWATCH_SYMBOLS_PERF_MAP_H_
#define HANGWATCH_SYMBOLS_PERF_MAP_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"

namespace hangwatch::symbols {

struct PerfMapLimits {
  size_t max_read_bytes = 8u << 20;  // per Refresh()
  size_t max_entries = 1u << 20;
  size_t max_name_bytes = 512;  // longer names are cut
  // A file last modified before this (ms since the Unix epoch) is not read: another process's
  // that had the same pid (0: any).
  int64_t not_before_unix_ms = 0;
};

class PerfMap {
 public:
  explicit PerfMap(std::string path, PerfMapLimits limits = {});

  // Reads what was appended since the last call (see above). Returns the number of entries
  // added.
  size_t Refresh();

  // The writer rewrote the whole file in place (the JVM's `Compiler.perfmap` does, each time it
  // is asked): the next Refresh() forgets every name and reads the file again from its start,
  // since what it appended lies among the old lines, not after them.
  void ReadAgainFromStart();

  // The name of the code holding `addr`; false when unknown.
  bool Find(uint64_t addr, std::string* name, uint64_t* function_offset = nullptr) const;

  size_t size() const;
  const std::string& path() const { return path_; }
  // When the file was last modified (ms since the Unix epoch) as the last Refresh() that opened
  // it saw; 0 before. A reader of another process's map after the fact compares it with when
  // that process ran: a map older than the process is another's that had the same pid.
  int64_t modified_unix_ms() const;

  // Parses one line (without its newline); false for garbage. Exposed for tests.
  static bool ParseLine(std::string_view line, uint64_t* start, uint64_t* size,
                        std::string_view* name);

 private:
  struct Entry {
    uint64_t end = 0;
    uint64_t serial = 0;  // insertion order, to drop the oldest
    std::string name;
  };
  void AddLocked(uint64_t start, uint64_t size, std::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const PerfMapLimits limits_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by start, non-overlapping
  uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t read_offset_ ABSL_GUARDED_BY(mu_) = 0;  // bytes consumed (complete lines)
  uint64_t inode_ ABSL_GUARDED_BY(mu_) = 0;
  std::string head_ ABSL_GUARDED_BY(mu_);  // the file's first bytes, to notice a new file
  bool seen_ ABSL_GUARDED_BY(mu_) = false;
  bool read_again_ ABSL_GUARDED_BY(mu_) = false;
  int64_t modified_unix_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

// The perf map of the calling process (/tmp/perf-<getpid()>.map), one per pid (a forked child
// gets its own), never freed. A file there last modified before this process started (less 2 s,
// a margin for the clocks: unwind::ProcessStartUnixMs) is an earlier process's that had the
// same pid, which a program that writes no map of its own would otherwise be named from.
PerfMap& PerfMapOfThisProcess();

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_PERF_MAP_H_
