// Was it us or the machine? Two snapshots of a thread's scheduling counters, its process's
// cgroup CPU throttling and the machine's pressure stall information, one at the start of a
// hang and one at its end (or at a sample), compared:
//   starved    the thread waited on a run queue for >= 50 % of the interval
//              (/proc/PID/task/TID/schedstat run_delay), with how many other threads of the
//              process were runnable;
//   throttled  the cgroup's CPU quota stopped the process (cpu.stat nr_throttled /
//              throttled_usec; cgroup v2, else the v1 cpu controller);
//   pressure   the machine stalled on CPU, memory or I/O for >= 10 % of the interval
//              (/proc/pressure/{cpu,memory,io} "some" totals; absent without CONFIG_PSI): a
//              figure, the machine's; whether it is a hang's cause is the thread's own share
//              (agent/samplers/wait_fd_cause.h, RefineBySchedule: a fifth of the hang or more);
//   faults     the thread's major and minor page faults (stat fields 12 and 10).
//
// Runs on the watchdog thread. libc and unwind/proc_files.h only; SchedProbe::Init reads
// /proc/PID/cgroup and /proc/self/mountinfo once, Take() then allocates nothing and reads a
// bounded number of small files. Unreadable files leave their `has_` flag false. Linux only.
#ifndef HANGWATCH_CAUSE_SCHED_PRESSURE_H_
#define HANGWATCH_CAUSE_SCHED_PRESSURE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace hangwatch::cause {

// One line of a /proc/pressure file: "some avg10=1.50 avg60=0.20 avg300=0.05 total=12345".
struct PsiLine {
  bool present = false;
  double avg10 = 0;       // percent of the last 10 s
  uint64_t total_us = 0;  // cumulative stall time
};

struct PsiResource {
  PsiLine some;  // some task stalled on the resource
  PsiLine full;  // every non-idle task stalled (absent for cpu on older kernels)
};

struct SchedSnapshot {
  int64_t mono_ns = 0;  // CLOCK_MONOTONIC when taken
  pid_t tid = 0;

  bool has_schedstat = false;  // schedstat read (CONFIG_SCHED_INFO)
  uint64_t cpu_ns = 0;         // time on a CPU
  uint64_t run_delay_ns = 0;   // time runnable, waiting on a run queue

  bool has_stat = false;  // stat read
  char state = '?';       // R, S, D...
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;

  bool has_threads = false;  // /proc/PID/task listed
  // Other threads of the process in state R now (bounded scan), the one taking the snapshot
  // left out.
  uint32_t runnable_others = 0;

  bool has_cgroup = false;  // the cgroup's cpu.stat read, with throttling fields
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_usec = 0;

  PsiResource cpu, memory, io;  // machine-wide
};

// About 72 KiB: allocate it once (not on a small stack).
class SchedProbe {
 public:
  // Finds the cpu.stat of process `pid`'s cgroup (0: this process). Call once, before Take.
  void Init(pid_t pid);
  // Reads the counters of thread `tid` of that process.
  void Take(pid_t tid, SchedSnapshot* out);
  // The cpu.stat path found ("" when none).
  const char* cpu_stat_path() const { return cpu_stat_path_; }

 private:
  pid_t pid_ = 0;
  bool cgroup_v1_ = false;  // cpu.stat in v1 has throttled_time (ns), not throttled_usec
  char cpu_stat_path_[512] = {};
  char text_[4096];
  char mountinfo_[65536];  // Init only
  alignas(8) char dents_[4096];
};

// What changed between two snapshots of the same thread.
struct SchedPressure {
  int64_t duration_ns = 0;  // after.mono_ns - before.mono_ns

  bool has_run_delay = false;
  uint64_t run_delay_ns = 0;        // waited for a CPU
  uint64_t cpu_ns = 0;              // ran
  uint32_t run_delay_permille = 0;  // of duration
  bool starved = false;             // run_delay >= 50 % of duration
  uint32_t runnable_others = 0;     // the larger of the two snapshots' counts

  bool has_cgroup = false;
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_usec = 0;
  bool throttled = false;  // nr_throttled grew

  struct Resource {
    bool present = false;
    uint64_t some_us = 0;        // stall time of "some" over the interval
    uint64_t full_us = 0;        // of "full"
    uint32_t some_permille = 0;  // of duration
    double some_avg10 = 0;       // at the end
    double full_avg10 = 0;       // at the end (0 without a "full" line)
  };
  Resource cpu, memory, io;
  bool pressure = false;  // some resource's "some" stall >= 10 % of duration

  bool has_faults = false;
  uint64_t major_faults = 0;
  uint64_t minor_faults = 0;

  char state = '?';      // at the end
  bool d_state = false;  // in uninterruptible sleep at either snapshot
};

SchedPressure Compare(const SchedSnapshot& before, const SchedSnapshot& after);

// "starved: waited 812 ms for a CPU (81 % of 1000 ms), 3 other threads runnable; machine
// pressure: cpu 45 %; 12 major faults" (only what applies; "no scheduling pressure" else).
size_t FormatSummary(const SchedPressure& p, char* buf, size_t n);

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_SCHED_PRESSURE_H_
