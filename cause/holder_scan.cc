// FindHolders: /proc/PID/fd listed with getdents64 (opendir would allocate), each link read with
// readlinkat relative to the directory, compared with the queries' link texts.
#include "cause/holder_scan.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "unwind/proc_files.h"

namespace hangwatch::cause {
namespace {

// The leading part of a linux_dirent64 record (the kernel's layout).
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// A decimal directory name ("1234"); -1 for anything else ("self", "net"...).
long DecimalName(const char* s) {
  if (*s == '\0') return -1;
  long v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9' || v > 100'000'000) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

class Scan {
 public:
  Scan(HolderQuery* queries, size_t count, const ScanBudget& budget, HolderScanBuffers* buffers)
      : queries_(queries),
        count_(count),
        budget_(budget),
        buffers_(buffers),
        deadline_(MonotonicNs() + budget.max_ns) {}

  // Reads the fd directory of process `pid`. False when the scan must stop.
  bool Process(pid_t pid) {
    if (stats_.processes + stats_.unreadable >= budget_.max_processes || OverTime()) {
      return Stop();
    }
    char path[48];
    unwind::ProcPath(pid, "fd", path, sizeof path);
    const int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
      ++stats_.unreadable;
      return true;
    }
    ++stats_.processes;
    bool go_on = true;
    while (go_on) {
      const long n = syscall(SYS_getdents64, dir, buffers_->fd_dents, sizeof buffers_->fd_dents);
      if (n <= 0) break;
      for (long at = 0; at < n && go_on;) {
        const auto* d = reinterpret_cast<const Dirent64*>(buffers_->fd_dents + at);
        at += d->reclen;
        const long fd = DecimalName(d->name);
        if (fd < 0) continue;
        go_on = Descriptor(dir, pid, static_cast<int>(fd), d->name);
      }
    }
    close(dir);
    return go_on && !AllFull();
  }

  const ScanStats& stats() const { return stats_; }

 private:
  bool Descriptor(int dir, pid_t pid, int fd, const char* name) {
    if (stats_.descriptors >= budget_.max_descriptors ||
        ((stats_.descriptors & 63) == 0 && OverTime())) {
      return Stop();
    }
    ++stats_.descriptors;
    const ssize_t n = readlinkat(dir, name, buffers_->link, sizeof buffers_->link);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buffers_->link) return true;
    for (size_t i = 0; i < count_; ++i) {
      HolderQuery& q = queries_[i];
      if (static_cast<size_t>(n) != q.link_size ||
          std::memcmp(buffers_->link, q.link, q.link_size) != 0) {
        continue;
      }
      if (pid == q.exclude_pid && fd == q.exclude_fd) continue;
      Add(q.out, pid, fd);
    }
    return true;
  }

  static void Add(PeerList* list, pid_t pid, int fd) {
    for (uint8_t i = 0; i < list->count; ++i) {
      if (list->peers[i].pid == pid) return;  // one entry per process
    }
    if (list->count == kMaxPeers) {
      list->truncated = true;
      return;
    }
    PeerProcess& p = list->peers[list->count++];
    p.pid = pid;
    p.fd = fd;
    ReadProcessName(pid, p.name);
  }

  bool AllFull() const {
    for (size_t i = 0; i < count_; ++i) {
      const HolderQuery& q = queries_[i];
      if (q.out->count < (q.first_holder_enough ? 1 : kMaxPeers)) return false;
    }
    return true;
  }
  bool OverTime() const { return MonotonicNs() > deadline_; }
  bool Stop() {
    stats_.complete = false;
    return false;
  }

  HolderQuery* queries_;
  size_t count_;
  const ScanBudget& budget_;
  HolderScanBuffers* buffers_;
  int64_t deadline_;
  ScanStats stats_;
};

}  // namespace

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void ReadProcessName(pid_t pid, char (&name)[16]) {
  char path[48];
  unwind::ProcPath(pid, "comm", path, sizeof path);
  const ssize_t n = unwind::ReadProcFile(path, name, sizeof name);
  if (n <= 0) {
    name[0] = '\0';
    return;
  }
  if (name[n - 1] == '\n') name[n - 1] = '\0';
}

bool HolderCache::Lookup(const HolderQuery& q, HolderScanBuffers* buffers, ScanStats* stats) {
  for (Entry& e : entries_) {
    if (!e.used || e.link_size != q.link_size || std::memcmp(e.link, q.link, q.link_size) != 0) {
      continue;
    }
    for (uint8_t i = 0; i < e.peers.count; ++i) {
      const PeerProcess& p = e.peers.peers[i];
      char path[64];
      char leaf[32];
      std::snprintf(leaf, sizeof leaf, "fd/%d", p.fd);
      unwind::ProcPath(p.pid, leaf, path, sizeof path);
      const ssize_t n = readlink(path, buffers->link, sizeof buffers->link);
      if (n != static_cast<ssize_t>(q.link_size) || std::memcmp(buffers->link, q.link, n) != 0) {
        e.used = false;  // that holder let go: scan again
        return false;
      }
    }
    *q.out = e.peers;
    *stats = e.stats;
    stats->cached = true;
    return true;
  }
  return false;
}

void HolderCache::Store(const HolderQuery& q, const ScanStats& stats) {
  if (!stats.complete || q.out->count == 0 || q.link_size >= sizeof entries_[0].link) return;
  Entry* slot = nullptr;
  for (Entry& e : entries_) {
    if (e.used && e.link_size == q.link_size && std::memcmp(e.link, q.link, q.link_size) == 0) {
      slot = &e;
    }
  }
  if (slot == nullptr) slot = &entries_[next_++ % (sizeof entries_ / sizeof entries_[0])];
  slot->used = true;
  std::memcpy(slot->link, q.link, q.link_size);
  slot->link_size = q.link_size;
  slot->peers = *q.out;
  slot->stats = stats;
}

void HolderCache::Clear() {
  for (Entry& e : entries_) e.used = false;
  next_ = 0;
}

ScanStats FindHolders(pid_t first_pid, HolderQuery* queries, size_t query_count,
                      const ScanBudget& budget, HolderScanBuffers* buffers) {
  Scan scan(queries, query_count, budget, buffers);
  const pid_t first = first_pid > 0 ? first_pid : getpid();
  if (query_count == 0 || !scan.Process(first)) return scan.stats();
  const int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) {
    ScanStats stats = scan.stats();
    stats.complete = false;
    return stats;
  }
  bool go_on = true;
  while (go_on) {
    const long n = syscall(SYS_getdents64, proc, buffers->proc_dents, sizeof buffers->proc_dents);
    if (n <= 0) break;
    for (long at = 0; at < n && go_on;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buffers->proc_dents + at);
      at += d->reclen;
      const long pid = DecimalName(d->name);
      if (pid <= 0 || pid == first) continue;
      go_on = scan.Process(static_cast<pid_t>(pid));
    }
  }
  close(proc);
  return scan.stats();
}

}  // namespace hangwatch::cause
