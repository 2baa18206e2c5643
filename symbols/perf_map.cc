// PerfMap: incremental reader of /tmp/perf-PID.map (perf_map.h).
#include "symbols/perf_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "symbols/regular_file.h"
#include "unwind/proc_files.h"

namespace hangwatch::symbols {
namespace {

// Parses a hex number (optional 0x) at the front of `s`, consuming it. False when no digits or
// more than 16 of them.
bool TakeHex(std::string_view* s, uint64_t* out) {
  std::string_view v = *s;
  if (v.size() >= 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) v.remove_prefix(2);
  uint64_t x = 0;
  size_t digits = 0;
  while (!v.empty()) {
    const char c = v[0];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    if (++digits > 16) return false;
    x = x << 4 | static_cast<uint64_t>(d);
    v.remove_prefix(1);
  }
  if (digits == 0) return false;
  *out = x;
  *s = v;
  return true;
}

}  // namespace

PerfMap::PerfMap(std::string path, PerfMapLimits limits)
    : path_(std::move(path)), limits_(limits) {}

bool PerfMap::ParseLine(std::string_view line, uint64_t* start, uint64_t* size,
                        std::string_view* name) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!TakeHex(&line, start) || line.empty() || line[0] != ' ') return false;
  line.remove_prefix(1);
  if (!TakeHex(&line, size) || line.empty() || line[0] != ' ') return false;
  line.remove_prefix(1);
  if (*size == 0 || *start + *size < *start) return false;  // empty or wrapping around
  // A name is text: no control characters (a torn or binary line is garbage).
  if (line.empty()) return false;
  for (unsigned char c : line) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  *name = line;
  return true;
}

void PerfMap::AddLocked(uint64_t start, uint64_t size, std::string_view name) {
  const uint64_t end = start + size;
  // Remove what the new entry overlaps: that code is gone.
  auto it = entries_.lower_bound(start);
  if (it != entries_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > start) it = prev;
  }
  while (it != entries_.end() && it->first < end) it = entries_.erase(it);
  if (entries_.size() >= limits_.max_entries) {
    // Full: drop the older half (one sweep per max_entries / 2 additions).
    const uint64_t keep_from =
        next_serial_ - std::min<uint64_t>(next_serial_, limits_.max_entries / 2);
    for (auto e = entries_.begin(); e != entries_.end();) {
      e = e->second.serial < keep_from ? entries_.erase(e) : std::next(e);
    }
  }
  Entry& e = entries_[start];
  e.end = end;
  e.serial = next_serial_++;
  e.name.assign(name.substr(0, limits_.max_name_bytes));
}

size_t PerfMap::Refresh() {
  // /tmp is everyone's: another user may have put anything at our path. A map that another user
  // wrote for our pid would name our code as they like (perf makes the same check); a FIFO or a
  // device would block or never end. Opened before taking mu_, and never blocking: the caller
  // may hold a lock that fork() waits for (the agent's watchdog).
  auto opened = RegularFile::Open(path_, {.no_follow = true, .own_user_only = true});
  if (!opened.ok()) return 0;  // not written (yet), gone or refused: keep what was read
  const int fd = opened->fd();
  const struct stat& st = opened->stat();
  absl::MutexLock lock(&mu_);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // The same file still starts as it did (an inode number can be reused at once).
  bool same_head = true;
  if (seen_ && !head_.empty()) {
    std::string head(head_.size(), '\0');
    same_head = pread(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) &&
                head == head_;
  }
  if (read_again_ || (seen_ && (st.st_ino != inode_ || file_size < read_offset_ || !same_head))) {
    // Replaced or truncated: another program's map (a recycled pid) or a restart; or rewritten.
    read_again_ = false;
    entries_.clear();
    read_offset_ = 0;
    head_.clear();
  }
  const int64_t modified_ms =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  if (modified_ms < limits_.not_before_unix_ms) return 0;  // an earlier process's
  seen_ = true;
  inode_ = st.st_ino;
  modified_unix_ms_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  size_t added = 0;
  if (file_size > read_offset_) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(file_size - read_offset_, limits_.max_read_bytes));
    std::vector<char> buf(want);
    size_t got = 0;
    while (got < want) {
      const ssize_t n =
          pread(fd, buf.data() + got, want - got, static_cast<off_t>(read_offset_ + got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    std::string_view data(buf.data(), got);
    size_t consumed = 0;
    while (consumed < data.size()) {
      const size_t nl = data.find('\n', consumed);
      if (nl == data.npos) {
        // An incomplete last line: the writer is in the middle of it, unless the line is longer
        // than a whole read, which would stall the reader forever: skip such a line.
        if (consumed == 0 && got == limits_.max_read_bytes) consumed = data.size();
        break;
      }
      uint64_t start, size;
      std::string_view name;
      if (ParseLine(data.substr(consumed, nl - consumed), &start, &size, &name)) {
        AddLocked(start, size, name);
        ++added;
      }
      consumed = nl + 1;
    }
    if (read_offset_ == 0) head_.assign(data.substr(0, std::min<size_t>(got, 64)));
    read_offset_ += consumed;
  }
  return added;
}

void PerfMap::ReadAgainFromStart() {
  absl::MutexLock lock(&mu_);
  read_again_ = true;
}

bool PerfMap::Find(uint64_t addr, std::string* name, uint64_t* function_offset) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.upper_bound(addr);
  if (it == entries_.begin()) return false;
  --it;
  if (addr >= it->second.end) return false;
  if (name != nullptr) *name = it->second.name;
  if (function_offset != nullptr) *function_offset = addr - it->first;
  return true;
}

size_t PerfMap::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

int64_t PerfMap::modified_unix_ms() const {
  absl::MutexLock lock(&mu_);
  return modified_unix_ms_;
}

PerfMap& PerfMapOfThisProcess() {
  static absl::Mutex mu(absl::kConstInit);
  static auto* maps = new std::map<pid_t, std::unique_ptr<PerfMap>>;  // never destroyed
  const pid_t pid = getpid();
  absl::MutexLock lock(&mu);
  auto& slot = (*maps)[pid];
  if (slot == nullptr) {
    PerfMapLimits limits;
    const int64_t started = unwind::ProcessStartUnixMs(0);
    limits.not_before_unix_ms = started > 2000 ? started - 2000 : 0;
    slot = std::make_unique<PerfMap>("/tmp/perf-" + std::to_string(pid) + ".map", limits);
  }
  return *slot;
}

}  // namespace hangwatch::symbols
