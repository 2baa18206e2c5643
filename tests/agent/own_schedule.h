// The calling thread's own scheduling figures (/proc/thread-self/schedstat: time on a CPU, time
// runnable waiting for one) and the clock, taken before and after a pass: what the agent
// compares over a hang, measured by the test over its own pass, so that a test on a loaded
// machine knows which share of the pass was whose.
#ifndef HANGWATCH_TESTS_AGENT_OWN_SCHEDULE_H_
#define HANGWATCH_TESTS_AGENT_OWN_SCHEDULE_H_

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace hangwatch::testing {

struct OwnSchedule {
  uint64_t wall_ns = 0, cpu_ns = 0, run_delay_ns = 0;

  static OwnSchedule Now() {
    OwnSchedule s;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s.wall_ns =
        static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
    if (FILE* f = std::fopen("/proc/thread-self/schedstat", "r")) {
      unsigned long long cpu = 0, delay = 0;
      if (std::fscanf(f, "%llu %llu", &cpu, &delay) == 2) {
        s.cpu_ns = cpu;
        s.run_delay_ns = delay;
      }
      std::fclose(f);
    }
    return s;
  }
};

// The shares of a pass between two snapshots: on a CPU, waiting for one, and blocked (the rest:
// off the CPU and not waiting for it).
struct PassShares {
  uint64_t wall_ns = 0, cpu_ns = 0, run_delay_ns = 0, blocked_ns = 0;

  PassShares() = default;
  PassShares(const OwnSchedule& before, const OwnSchedule& after)
      : wall_ns(after.wall_ns - before.wall_ns),
        cpu_ns(after.cpu_ns - before.cpu_ns),
        run_delay_ns(after.run_delay_ns - before.run_delay_ns) {
    blocked_ns = cpu_ns + run_delay_ns < wall_ns ? wall_ns - cpu_ns - run_delay_ns : 0;
  }
  // Per mille of the pass.
  uint64_t Permille(uint64_t ns) const { return wall_ns > 0 ? ns * 1000 / wall_ns : 0; }
  std::string Text() const {
    return "pass " + std::to_string(wall_ns / 1'000'000) + " ms: cpu " +
           std::to_string(cpu_ns / 1'000'000) + ", run delay " +
           std::to_string(run_delay_ns / 1'000'000) + ", blocked " +
           std::to_string(blocked_ns / 1'000'000);
  }
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_AGENT_OWN_SCHEDULE_H_
