#include "agent/core/watchdog_env.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "unwind/proc_files.h"

namespace hangwatch::agent {
namespace {

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
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
  bool ThreadName(const unwind::ThreadInfo& thread, char out[16]) override {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(thread.tid));
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = read(fd, out, 15);
    close(fd);
    if (n <= 0) return false;
    out[n] = '\0';
    if (out[n - 1] == '\n') out[n - 1] = '\0';
    return out[0] != '\0';
  }
  bool ThreadExited(const unwind::ThreadInfo& thread) override {
    const char state = ReadSchedState(thread.tid);
    if (state == 'Z' || state == 'X') return true;
    // Unreadable: gone from /proc/self/task, or /proc itself is not there. Only the first
    // means exited.
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", static_cast<int>(thread.tid));
    return state == '?' && access(path, F_OK) != 0 && errno == ENOENT &&
           access("/proc/self/task", F_OK) == 0;
  }
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
    unwind::SchedStat stat;
    if (unwind::ParseSchedStat(buf, static_cast<size_t>(n), &stat) < 2) {
      return false;
    }
    *cpu_ns = stat.cpu_ns;
    *run_delay_ns = stat.run_delay_ns;
    return true;
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

char ReadSchedState(pid_t tid) { return unwind::ReadSchedState(tid); }

long ReadTracerPid() { return unwind::ReadTracerPid(0); }

std::unique_ptr<WatchdogEnv> MakeSystemWatchdogEnv() { return std::make_unique<SystemEnv>(); }

void NameWatchdogThread() { pthread_setname_np(pthread_self(), "hangwatch"); }

}  // namespace hangwatch::agent
