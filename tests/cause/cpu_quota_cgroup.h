// A cgroup of the test's own with a CPU quota, for tests of throttling (cause/sched_pressure.h
// reads its cpu.stat): made in the first hierarchy of this machine that has the cpu controller
// and lets the test write its quota (cgroup v1's cpu.cfs_quota_us, v2's cpu.max), removed
// (rmdir) when destroyed; a process still in it then keeps it (end the processes first). Needs
// root. System calls only, so that a forked child can use it.
#ifndef HANGWATCH_TESTS_CAUSE_CPU_QUOTA_CGROUP_H_
#define HANGWATCH_TESTS_CAUSE_CPU_QUOTA_CGROUP_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hangwatch::testing {

class CpuQuotaCgroup {
 public:
  // Makes a cgroup named `name` with no quota yet; ok() false, and why() saying why, when no
  // hierarchy lets it (not root, no cpu controller, read-only /sys/fs/cgroup).
  explicit CpuQuotaCgroup(const std::string& name) {
    if (geteuid() != 0) {
      why_ = "creating a cgroup needs root";
      return;
    }
    for (const char* base : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      const std::string d = std::string(base) + "/" + name;
      if (mkdir(d.c_str(), 0755) != 0) continue;
      if (access((d + "/cpu.cfs_quota_us").c_str(), W_OK) == 0) {
        dir_ = d;
        v2_ = false;
        return;
      }
      if (access((d + "/cpu.max").c_str(), W_OK) == 0) {
        dir_ = d;
        v2_ = true;
        return;
      }
      rmdir(d.c_str());
    }
    why_ = "no writable cgroup with a CPU quota (cpu.cfs_quota_us, cpu.max) under /sys/fs/cgroup";
  }
  ~CpuQuotaCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  CpuQuotaCgroup(const CpuQuotaCgroup&) = delete;
  CpuQuotaCgroup& operator=(const CpuQuotaCgroup&) = delete;

  bool ok() const { return !dir_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& dir() const { return dir_; }

  // Lets the cgroup's processes run quota_us of every period_us (quota_us -1: no limit). False
  // when the kernel refuses the numbers.
  bool Limit(long quota_us, long period_us) const {
    if (v2_) {
      std::string max = quota_us < 0 ? std::string("max") : std::to_string(quota_us);
      max += ' ';
      max += std::to_string(period_us);
      return Write("cpu.max", max);
    }
    // v1 checks the quota against the period in force: lift it, set the period, then limit.
    return Write("cpu.cfs_quota_us", "-1") &&
           Write("cpu.cfs_period_us", std::to_string(period_us)) &&
           Write("cpu.cfs_quota_us", std::to_string(quota_us));
  }

  // Moves process `pid`, all its threads, into the cgroup.
  bool Join(pid_t pid) const { return Write("cgroup.procs", std::to_string(pid)); }

  // The periods in which the cgroup used up its quota so far (cpu.stat's nr_throttled); false
  // when it cannot be read.
  bool NrThrottled(uint64_t* out) const {
    const int fd = open((dir_ + "/cpu.stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char text[1024];
    const ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) return false;
    text[n] = '\0';
    const char* at = std::strstr(text, "nr_throttled ");
    if (at == nullptr) return false;
    *out = std::strtoull(at + std::strlen("nr_throttled "), nullptr, 10);
    return true;
  }

 private:
  bool Write(const char* file, const std::string& text) const {
    const int fd = open((dir_ + "/" + file).c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    return ok;
  }

  std::string dir_;
  std::string why_;
  bool v2_ = false;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_CAUSE_CPU_QUOTA_CGROUP_H_
