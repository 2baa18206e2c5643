#include "agent/watchdog_env.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "unwind/task_file.h"

namespace hangwatch::agent {
namespace {

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Reads up to size-1 bytes of a small /proc file into buf (NUL-terminated). Returns the length
// or -1.
ssize_t ReadSmallFile(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  ssize_t total = 0;
  while (static_cast<size_t>(total) + 1 < size) {
    const ssize_t n = read(fd, buf + total, size - 1 - static_cast<size_t>(total));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    total += n;
  }
  close(fd);
  buf[total] = '\0';
  return total;
}

class SystemEnv final : public WatchdogEnv {
 public:
  uint64_t MonotonicNs() override { return ReadClock(CLOCK_MONOTONIC); }
  uint64_t BoottimeNs() override { return ReadClock(CLOCK_BOOTTIME); }
  int64_t UnixMs() override { return static_cast<int64_t>(ReadClock(CLOCK_REALTIME) / 1000000); }
  bool ThreadCpuNs(const unwind::ThreadInfo& thread, uint64_t* out) override {
    timespec ts{};
    if (clock_gettime(thread.cpu_clock, &ts) != 0) {
      return false;
    }
    *out = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    return true;
  }
  char SchedState(const unwind::ThreadInfo& thread) override { return ReadSchedState(thread.tid); }
  bool DebuggerAttached() override { return ReadTracerPid() != 0; }
  bool OwnSchedStat(uint64_t* cpu_ns, uint64_t* run_delay_ns) override {
    // Opened once, on the watchdog thread (thread-self is resolved at open), read with pread.
    if (schedstat_fd_ == -1) {
      schedstat_fd_ = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
      if (schedstat_fd_ < 0) {
        schedstat_fd_ = -2;
      }
    }
    if (schedstat_fd_ < 0) {
      return false;
    }
    char buf[128];
    const ssize_t n = pread(schedstat_fd_, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
      return false;
    }
    buf[n] = '\0';
    // "<ns on cpu> <ns waiting on a runqueue> <timeslices>"
    char* end = nullptr;
    *cpu_ns = std::strtoull(buf, &end, 10);
    if (end == buf) {
      return false;
    }
    const char* second = end;
    *run_delay_ns = std::strtoull(second, &end, 10);
    return end != second;
  }
  ~SystemEnv() override {
    if (schedstat_fd_ >= 0) {
      close(schedstat_fd_);
    }
  }

 private:
  int schedstat_fd_ = -1;
};

}  // namespace

char ReadSchedState(pid_t tid) {
  unwind::internal::SchedStateFiles files;
  return unwind::internal::ReadSchedState(tid, &files);
}

long ReadTracerPid() {
  char buf[4096];
  if (ReadSmallFile("/proc/self/status", buf, sizeof(buf)) <= 0) {
    return 0;
  }
  const char* p = std::strstr(buf, "\nTracerPid:");
  if (p == nullptr) {
    return 0;
  }
  return std::strtol(p + std::strlen("\nTracerPid:"), nullptr, 10);
}

std::unique_ptr<WatchdogEnv> MakeSystemWatchdogEnv() { return std::make_unique<SystemEnv>(); }

}  // namespace hangwatch::agent
