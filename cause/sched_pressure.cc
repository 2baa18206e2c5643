// SchedProbe and Compare. The cgroup's cpu.stat is found once from /proc/PID/cgroup and
// /proc/self/mountinfo; each snapshot then reads schedstat, stat, the task list's states,
// cpu.stat and the three pressure files.
#include "cause/sched_pressure.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "cause/append_format.h"
#include "cause/holder_scan.h"
#include "unwind/proc_files.h"

namespace hangwatch::cause {
namespace {

inline constexpr uint32_t kMaxThreadsScanned = 1024;

// The value after "key " at the start of a line of `text` (cpu.stat's "nr_throttled 3").
bool KeyValue(const char* text, const char* key, uint64_t* out) {
  const size_t key_len = std::strlen(key);
  for (const char* p = text; p != nullptr && *p != '\0';) {
    if (std::strncmp(p, key, key_len) == 0 && p[key_len] == ' ') {
      *out = std::strtoull(p + key_len + 1, nullptr, 10);
      return true;
    }
    p = std::strchr(p, '\n');
    if (p != nullptr) ++p;
  }
  return false;
}

// One "some ..." or "full ..." line of a pressure file.
void ParsePsiLine(const char* text, const char* kind, PsiLine* out) {
  const char* line = std::strstr(text, kind);
  if (line == nullptr) return;
  const char* avg10 = std::strstr(line, "avg10=");
  const char* total = std::strstr(line, "total=");
  const char* eol = std::strchr(line, '\n');
  if (avg10 == nullptr || total == nullptr || (eol != nullptr && total > eol)) return;
  out->present = true;
  out->avg10 = std::strtod(avg10 + 6, nullptr);
  out->total_us = std::strtoull(total + 6, nullptr, 10);
}

void ReadPsi(const char* path, char* buf, size_t size, PsiResource* out) {
  *out = PsiResource{};
  if (unwind::ReadProcFile(path, buf, size) <= 0) return;
  ParsePsiLine(buf, "some ", &out->some);
  ParsePsiLine(buf, "full ", &out->full);
}

// Fields 10 (minflt) and 12 (majflt) of a stat line, counted after the last ')'.
bool ParseFaults(const char* text, size_t len, uint64_t* minor, uint64_t* major) {
  const char* p = nullptr;
  for (size_t i = len; i > 0; --i) {
    if (text[i - 1] == ')') {
      p = text + i;
      break;
    }
  }
  if (p == nullptr) return false;
  const char* end = text + len;
  int field = 2;  // the comm
  while (p < end && field < 12) {
    while (p < end && *p == ' ') ++p;
    ++field;
    const char* start = p;
    while (p < end && *p != ' ') ++p;
    if (field == 10) *minor = std::strtoull(start, nullptr, 10);
    if (field == 12) {
      *major = std::strtoull(start, nullptr, 10);
      return true;
    }
  }
  return false;
}

// The path of `controller`'s hierarchy for this process's cgroup line, in "H:CONTROLLERS:PATH"
// lines. v2's line has "0::".
const char* CgroupPathOf(const char* cgroup_text, bool v2, const char* controller) {
  for (const char* line = cgroup_text; line != nullptr && *line != '\0';) {
    const char* first = std::strchr(line, ':');
    const char* second = first != nullptr ? std::strchr(first + 1, ':') : nullptr;
    const char* eol = std::strchr(line, '\n');
    if (second != nullptr && (eol == nullptr || second < eol)) {
      if (v2 && first == second - 1 && line[0] == '0') return second + 1;
      if (!v2) {
        // The controller list, comma-separated, between the two colons.
        const size_t clen = std::strlen(controller);
        for (const char* c = first + 1; c < second;) {
          const char* comma = static_cast<const char*>(std::memchr(c, ',', second - c));
          const char* stop = comma != nullptr ? comma : second;
          if (static_cast<size_t>(stop - c) == clen && std::strncmp(c, controller, clen) == 0) {
            return second + 1;
          }
          c = stop + 1;
        }
      }
    }
    line = eol != nullptr ? eol + 1 : nullptr;
  }
  return nullptr;
}

// The mount point of the cgroup2 file system (v2) or of the v1 hierarchy carrying `option`
// ("cpu") from mountinfo, into out. False when none.
bool CgroupMount(const char* mountinfo, bool v2, const char* option, char* out, size_t n) {
  for (const char* line = mountinfo; line != nullptr && *line != '\0';) {
    const char* eol = std::strchr(line, '\n');
    const size_t len = eol != nullptr ? static_cast<size_t>(eol - line) : std::strlen(line);
    char copy[1024];
    if (len < sizeof copy) {
      std::memcpy(copy, line, len);
      copy[len] = '\0';
      // id parent major:minor root mountpoint options ... - fstype source superoptions
      char* fields[5] = {};
      char* save = nullptr;
      char* tok = strtok_r(copy, " ", &save);
      for (int i = 0; i < 5 && tok != nullptr; ++i) {
        fields[i] = tok;
        if (i < 4) tok = strtok_r(nullptr, " ", &save);
      }
      const char* dash = std::strstr(line, " - ");
      if (fields[4] != nullptr && dash != nullptr && static_cast<size_t>(dash - line) < len) {
        char type[64] = {}, super[256] = {};
        std::sscanf(dash + 3, "%63s %*s %255s", type, super);
        bool match = false;
        if (v2) {
          match = std::strcmp(type, "cgroup2") == 0;
        } else if (std::strcmp(type, "cgroup") == 0) {
          char* s2 = nullptr;
          for (char* o = strtok_r(super, ",", &s2); o != nullptr; o = strtok_r(nullptr, ",", &s2)) {
            if (std::strcmp(o, option) == 0) match = true;
          }
        }
        if (match) {
          std::snprintf(out, n, "%s", fields[4]);
          return true;
        }
      }
    }
    line = eol != nullptr ? eol + 1 : nullptr;
  }
  return false;
}

uint32_t Permille(uint64_t part, int64_t whole) {
  if (whole <= 0) return 0;
  const uint64_t p = part * 1000 / static_cast<uint64_t>(whole);
  return p > 1000000 ? 1000000 : static_cast<uint32_t>(p);
}

SchedPressure::Resource ComparePsi(const PsiResource& a, const PsiResource& b, int64_t ns) {
  SchedPressure::Resource r;
  if (!a.some.present || !b.some.present) return r;
  r.present = true;
  r.some_us = b.some.total_us >= a.some.total_us ? b.some.total_us - a.some.total_us : 0;
  if (a.full.present && b.full.present && b.full.total_us >= a.full.total_us) {
    r.full_us = b.full.total_us - a.full.total_us;
  }
  r.some_permille = Permille(r.some_us * 1000, ns);
  r.some_avg10 = b.some.avg10;
  r.full_avg10 = b.full.present ? b.full.avg10 : 0;
  return r;
}

}  // namespace

void SchedProbe::Init(pid_t pid) {
  pid_ = pid;
  cpu_stat_path_[0] = '\0';
  char cgroup[4096];
  char path[64];
  unwind::ProcPath(pid, "cgroup", path, sizeof path);
  if (unwind::ReadProcFile(path, cgroup, sizeof cgroup) <= 0) return;
  char* mountinfo = mountinfo_;
  if (unwind::ReadProcFile("/proc/self/mountinfo", mountinfo, sizeof mountinfo_) <= 0) return;
  for (bool v2 : {true, false}) {
    const char* rel = CgroupPathOf(cgroup, v2, "cpu");
    char mount[256];
    if (rel == nullptr || !CgroupMount(mountinfo, v2, "cpu", mount, sizeof mount)) continue;
    const char* eol = std::strchr(rel, '\n');
    const int rel_len = static_cast<int>(eol != nullptr ? eol - rel : std::strlen(rel));
    std::snprintf(cpu_stat_path_, sizeof cpu_stat_path_, "%s%.*s/cpu.stat", mount, rel_len, rel);
    uint64_t v = 0;
    // The root cgroup's cpu.stat has no throttling fields: try the next hierarchy.
    if (unwind::ReadProcFile(cpu_stat_path_, text_, sizeof text_) > 0 &&
        KeyValue(text_, "nr_throttled", &v)) {
      cgroup_v1_ = !v2;
      return;
    }
    cpu_stat_path_[0] = '\0';
  }
}

void SchedProbe::Take(pid_t tid, SchedSnapshot* out) {
  *out = SchedSnapshot{};
  out->mono_ns = MonotonicNs();
  out->tid = tid;
  char path[96];
  unwind::TaskPath(pid_, tid, "schedstat", path, sizeof path);
  ssize_t n = unwind::ReadProcFile(path, text_, sizeof text_);
  unwind::SchedStat ss;
  if (n > 0 && unwind::ParseSchedStat(text_, static_cast<size_t>(n), &ss) >= 2) {
    out->has_schedstat = true;
    out->cpu_ns = ss.cpu_ns;
    out->run_delay_ns = ss.run_delay_ns;
  }
  unwind::TaskPath(pid_, tid, "stat", path, sizeof path);
  n = unwind::ReadProcFile(path, text_, sizeof text_);
  if (n > 0) {
    out->state = unwind::ParseStatState(text_, static_cast<size_t>(n));
    out->has_stat =
        ParseFaults(text_, static_cast<size_t>(n), &out->minor_faults, &out->major_faults);
  }
  unwind::ProcPath(pid_, "task", path, sizeof path);
  const int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // The thread taking the snapshot is running, reading this: in this process (the agent's
  // watchdog), it is not one of the threads the target competes with.
  const pid_t reader = pid_ == 0 || pid_ == getpid() ? static_cast<pid_t>(syscall(SYS_gettid)) : 0;
  if (dir >= 0) {
    out->has_threads = true;
    uint32_t scanned = 0;
    long got;
    while (scanned < kMaxThreadsScanned &&
           (got = syscall(SYS_getdents64, dir, dents_, sizeof dents_)) > 0) {
      for (long at = 0; at < got && scanned < kMaxThreadsScanned;) {
        const char* name = dents_ + at + 19;  // linux_dirent64: ino 8, off 8, reclen 2, type 1
        unsigned short reclen;
        std::memcpy(&reclen, dents_ + at + 16, sizeof reclen);
        at += reclen;
        if (name[0] < '0' || name[0] > '9') continue;
        const pid_t other = std::atoi(name);
        if (other == tid || other == reader) continue;
        ++scanned;
        char leaf[40];
        std::snprintf(leaf, sizeof leaf, "%s/stat", name);
        const ssize_t m = unwind::ReadProcFileAt(dir, leaf, text_, sizeof text_);
        if (m > 0 && unwind::ParseStatState(text_, static_cast<size_t>(m)) == 'R') {
          ++out->runnable_others;
        }
      }
    }
    close(dir);
  }
  if (cpu_stat_path_[0] != '\0' && unwind::ReadProcFile(cpu_stat_path_, text_, sizeof text_) > 0) {
    out->has_cgroup = KeyValue(text_, "nr_throttled", &out->nr_throttled);
    KeyValue(text_, "nr_periods", &out->nr_periods);
    if (cgroup_v1_) {
      uint64_t ns = 0;
      KeyValue(text_, "throttled_time", &ns);
      out->throttled_usec = ns / 1000;
    } else {
      KeyValue(text_, "throttled_usec", &out->throttled_usec);
    }
  }
  ReadPsi("/proc/pressure/cpu", text_, sizeof text_, &out->cpu);
  ReadPsi("/proc/pressure/memory", text_, sizeof text_, &out->memory);
  ReadPsi("/proc/pressure/io", text_, sizeof text_, &out->io);
}

SchedPressure Compare(const SchedSnapshot& a, const SchedSnapshot& b) {
  SchedPressure p;
  p.duration_ns = b.mono_ns - a.mono_ns;
  if (a.has_schedstat && b.has_schedstat && b.run_delay_ns >= a.run_delay_ns) {
    p.has_run_delay = true;
    p.run_delay_ns = b.run_delay_ns - a.run_delay_ns;
    p.cpu_ns = b.cpu_ns >= a.cpu_ns ? b.cpu_ns - a.cpu_ns : 0;
    p.run_delay_permille = Permille(p.run_delay_ns, p.duration_ns);
    p.starved = p.duration_ns > 0 && p.run_delay_permille >= 500;
  }
  p.runnable_others = a.runnable_others > b.runnable_others ? a.runnable_others : b.runnable_others;
  if (a.has_cgroup && b.has_cgroup && b.nr_throttled >= a.nr_throttled) {
    p.has_cgroup = true;
    p.nr_periods = b.nr_periods - a.nr_periods;
    p.nr_throttled = b.nr_throttled - a.nr_throttled;
    p.throttled_usec =
        b.throttled_usec >= a.throttled_usec ? b.throttled_usec - a.throttled_usec : 0;
    p.throttled = p.nr_throttled > 0;
  }
  p.cpu = ComparePsi(a.cpu, b.cpu, p.duration_ns);
  p.memory = ComparePsi(a.memory, b.memory, p.duration_ns);
  p.io = ComparePsi(a.io, b.io, p.duration_ns);
  p.pressure =
      p.cpu.some_permille >= 100 || p.memory.some_permille >= 100 || p.io.some_permille >= 100;
  if (a.has_stat && b.has_stat) {
    p.has_faults = true;
    p.major_faults = b.major_faults >= a.major_faults ? b.major_faults - a.major_faults : 0;
    p.minor_faults = b.minor_faults >= a.minor_faults ? b.minor_faults - a.minor_faults : 0;
  }
  p.state = b.state;
  p.d_state = a.state == 'D' || b.state == 'D';
  return p;
}

size_t FormatSummary(const SchedPressure& p, char* buf, size_t n) {
  if (n == 0) return 0;
  buf[0] = '\0';
  size_t at = 0;
  const char* sep = "";
  const long long ms = p.duration_ns / 1'000'000;
  if (p.starved) {
    AppendFormat(buf, n, &at,
                 "starved: waited %llu ms for a CPU (%u %% of %lld ms), %u other thread%s runnable",
                 static_cast<unsigned long long>(p.run_delay_ns / 1'000'000),
                 p.run_delay_permille / 10, ms, p.runnable_others,
                 p.runnable_others == 1 ? "" : "s");
    sep = "; ";
  }
  if (p.throttled) {
    AppendFormat(buf, n, &at,
                 "%sthrottled: the cgroup's CPU quota stopped it %llu time%s for %llu ms", sep,
                 static_cast<unsigned long long>(p.nr_throttled), p.nr_throttled == 1 ? "" : "s",
                 static_cast<unsigned long long>(p.throttled_usec / 1000));
    sep = "; ";
  }
  if (p.pressure) {
    AppendFormat(buf, n, &at, "%smachine pressure:", sep);
    const char* comma = "";
    const struct {
      const char* name;
      const SchedPressure::Resource& r;
    } rs[] = {{"cpu", p.cpu}, {"memory", p.memory}, {"io", p.io}};
    for (const auto& r : rs) {
      if (r.r.present && r.r.some_permille >= 100) {
        AppendFormat(buf, n, &at, "%s %s %u %%", comma, r.name, r.r.some_permille / 10);
        comma = ",";
      }
    }
    sep = "; ";
  }
  if (p.major_faults > 0) {
    AppendFormat(buf, n, &at, "%s%llu major fault%s", sep,
                 static_cast<unsigned long long>(p.major_faults), p.major_faults == 1 ? "" : "s");
    sep = "; ";
  }
  if (p.d_state) {
    AppendFormat(buf, n, &at, "%sin uninterruptible sleep (D)", sep);
    sep = "; ";
  }
  if (at == 0) AppendFormat(buf, n, &at, "no scheduling pressure");
  return at;
}

}  // namespace hangwatch::cause
