// End to end: a busy hang that was not only a computation says why it was slow: its process's
// cgroup ran out of CPU quota (throttled), or the main thread waited for a CPU for a material
// part of the pass (pressure); one that kept a CPU to itself on a machine short of CPU is a
// computation (the machine's state explains nothing of it).
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "hangwatch/hangwatch.h"
#include "report/report_decode.h"
#include "tests/agent/e2e_util.h"
#include "tests/agent/own_schedule.h"
#include "tests/cause/cpu_quota_cgroup.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;

volatile uint64_t g_spin;
HW_TEST_KEEP_FRAME void SpinFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) g_spin = g_spin + 1;
}

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  std::string p = dir != nullptr ? dir : "/tmp";
  p += "/hangwatch_";
  p += name;
  p += "_";
  p += std::to_string(getpid());
  p += ".jsonl";
  unlink(p.c_str());
  return p;
}

// The hang records of a JSON Lines report, read with the project's decoder.
std::vector<HangRecord> HangsIn(const std::string& path) {
  std::ifstream in(path);
  std::vector<HangRecord> out;
  for (std::string line; std::getline(in, line);) {
    report::Record r;
    std::string error;
    EXPECT_TRUE(report::Decode(line, &r, &error)) << error << ": " << line;
    if (const auto* h = std::get_if<HangRecord>(&r)) out.push_back(*h);
  }
  return out;
}

// Kills and reaps the processes it holds on every way out of a test.
struct Reaper {
  std::vector<pid_t> pids;
  ~Reaper() {
    for (pid_t pid : pids) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool PinTo(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// The forked child of the throttled test (it must never return into the test runner): joins
// the cgroup, then starts the agent (which finds its cgroup's cpu.stat at Start), limits the
// cgroup to 10 % of a CPU in 10 ms periods and computes in one pass for 600 ms, and until the
// watchdog has sampled it 20 times (bounded). The hang goes to the JSON Lines report `report`;
// the periods the quota ran out in during the pass, as cpu.stat says, to `throttled_fd`.
// Returns the exit code: 0, or which step failed.
int ThrottledChild(const testing::CpuQuotaCgroup& cgroup, const std::string& report,
                   int throttled_fd) {
  if (!cgroup.Join(getpid())) return 20;
  Config c = testing::TestConfig();
  c.json_path = report;
  if (!Start(c).ok()) return 21;
  testing::HangCollector collector;
  uint64_t throttled_before = 0, throttled_after = 0;
  if (!cgroup.Limit(1000, 10000) || !cgroup.NrThrottled(&throttled_before)) return 22;
  const uint64_t samples = GetStats().samples;
  const auto start = std::chrono::steady_clock::now();
  BeginWork();
  do {
    SpinFor(10ms);
  } while (
      (std::chrono::steady_clock::now() - start < 600ms || GetStats().samples < samples + 20) &&
      std::chrono::steady_clock::now() - start < 4s);
  EndWork();
  // The quota has done its work (its counters keep what it did): the report is written at
  // full speed. Lifted first, so that no throttling comes after the count.
  if (!cgroup.Limit(-1, 10000) || !cgroup.NrThrottled(&throttled_after)) return 23;
  const uint64_t throttled = throttled_after - throttled_before;
  if (write(throttled_fd, &throttled, sizeof(throttled)) != sizeof(throttled)) return 23;
  if (!collector.WaitFor(1, 10s)) return 24;
  Stop();
  return 0;
}

TEST(WaitCauseSchedTest, BusyPassInACpuLimitedCgroupIsThrottled) {
  testing::CpuQuotaCgroup cgroup("hangwatch-throttled-" + std::to_string(getpid()));
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.why();
  const std::string report = TempPath("throttled");
  int throttled_pipe[2];
  ASSERT_EQ(pipe(throttled_pipe), 0);
  Reaper reaper;  // destroyed before the cgroup: the cgroup is empty when removed
  const pid_t child = fork();
  if (child == 0) _exit(ThrottledChild(cgroup, report, throttled_pipe[1]));
  close(throttled_pipe[1]);
  ASSERT_GT(child, 0);
  reaper.pids.push_back(child);
  const int code = testing::WaitForChild(child, 30s);
  reaper.pids.clear();
  uint64_t throttled = 0;
  const bool told = read(throttled_pipe[0], &throttled, sizeof(throttled)) == sizeof(throttled);
  close(throttled_pipe[0]);
  const std::vector<HangRecord> hangs = HangsIn(report);
  unlink(report.c_str());
  ASSERT_EQ(code, 0) << "the child failed (20 join, 21 Start, 22 limit, 23 cpu.stat, 24 no "
                        "hang, -1 timed out)";
  ASSERT_TRUE(told);
  if (throttled == 0) {
    GTEST_SKIP() << "the cgroup never used up its quota during the pass (cpu.stat): the machine "
                    "gave the child less CPU than its 10 %, there was nothing to throttle";
  }
  ASSERT_EQ(hangs.size(), 1u);
  const HangRecord& h = hangs[0];
  EXPECT_EQ(h.pid, child);
  // The main thread waited for a CPU most of the pass, and that wait was the quota's:
  // throttled. A machine loaded enough keeps it waiting longer than the quota does (the
  // cgroup throttled for less than half of its wait): then starved, and it says the quota too.
  const std::string& summary = h.cause.summary;
  ASSERT_TRUE(h.cause.kind == CauseKind::kThrottled || h.cause.kind == CauseKind::kStarved)
      << CauseKindName(h.cause.kind) << ": " << summary;
  if (h.cause.kind == CauseKind::kStarved) {
    EXPECT_LE(h.cause.throttled_ms * 2, h.cause.run_delay_ms) << summary;
  }
  // Counted from the hang's first sample: within what cpu.stat says of the whole pass.
  EXPECT_GT(h.cause.nr_throttled, 0u) << summary;
  EXPECT_LE(h.cause.nr_throttled, throttled) << summary;
  EXPECT_NE(summary.find("the cgroup's CPU quota throttled the process "), std::string::npos)
      << summary;
}

// Processes spinning on `cpus`, `count` of them, at niceness `nice`; false when one could not
// pin itself.
bool StartHogs(Reaper* hogs, const std::vector<int>& cpus, size_t count, int nice) {
  int spinning[2];
  if (pipe(spinning) != 0) return false;
  for (size_t i = 0; i < count; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      const bool pinned = PinTo(cpus) && setpriority(PRIO_PROCESS, 0, nice) == 0;
      (void)!write(spinning[1], pinned ? "y" : "n", 1);
      for (;;) g_spin = g_spin + 1;
    }
    if (pid < 0) return false;
    hogs->pids.push_back(pid);
  }
  close(spinning[1]);
  bool all = true;
  for (size_t i = 0; i < count; ++i) {
    char c = 0;
    all = all && read(spinning[0], &c, 1) == 1 && c == 'y';
  }
  close(spinning[0]);
  return all;
}

// The main thread (and the watchdog started after it) on the first CPU, busy for 600 ms in one
// pass: its hang, and the shares of the pass as the thread's own counters say.
HangRecord BusyPassOnTheFirstCpu(const std::vector<int>& cpus, testing::PassShares* shares) {
  struct Unpin {
    std::vector<int> cpus;
    ~Unpin() { PinTo(cpus); }
  } unpin{cpus};
  EXPECT_TRUE(PinTo({cpus[0]}));
  EXPECT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  const testing::OwnSchedule before = testing::OwnSchedule::Now();
  BeginWork();
  SpinFor(600ms);
  EndWork();
  const testing::OwnSchedule after = testing::OwnSchedule::Now();
  const bool reported = collector.WaitFor(1);
  Stop();
  *shares = testing::PassShares(before, after);
  EXPECT_TRUE(reported);
  return reported ? collector.hangs()[0] : HangRecord{};
}

// Busy processes pinned to every CPU but the main thread's, more of them than those CPUs, so
// that the machine stalls on CPU while the main thread's own CPU is free for it: the main
// thread kept its CPU, so the pass was a computation, not the machine's pressure.
TEST(WaitCauseSchedTest, BusyPassThatKeptItsCpuOnAMachineShortOfCpuIsAComputation) {
  if (access("/proc/pressure/cpu", R_OK) != 0) {
    GTEST_SKIP() << "no /proc/pressure/cpu (a kernel without CONFIG_PSI, or booted psi=0)";
  }
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: the main thread cannot keep one to itself";
  const std::vector<int> others(cpus.begin() + 1, cpus.end());
  Reaper hogs;
  ASSERT_TRUE(StartHogs(&hogs, others, others.size() + 1, 0)) << "a busy process failed to pin";
  testing::PassShares pass;
  const HangRecord h = BusyPassOnTheFirstCpu(cpus, &pass);
  const std::string what =
      CauseKindName(h.cause.kind) + std::string(": ") + h.cause.summary + " (" + pass.Text() + ")";
  // Other tests and programs on the machine may share the main thread's CPU too: pressure or
  // starved then, and only for its own wait for a CPU, a fifth of the counters' interval or
  // more (which starts at the first sample, at most a threshold after the pass).
  if (pass.Permille(pass.run_delay_ns) < 100) {
    EXPECT_EQ(h.cause.kind, CauseKind::kNone) << what;
  }
  if (h.cause.kind == CauseKind::kPressure || h.cause.kind == CauseKind::kStarved) {
    EXPECT_GE(h.cause.run_delay_ms * 5, h.duration_ms - h.threshold_ms) << what;
    EXPECT_EQ(h.cause.pressure_resource, "cpu") << what;
  } else {
    EXPECT_EQ(h.cause.kind, CauseKind::kNone) << what;
  }
}

// One busy process at niceness 3 on the main thread's CPU takes about a third of it (CFS
// weights 526 against 1024): the main thread waited for a CPU for a material part of the pass,
// under half of it: the machine's CPU pressure, with the wait in its summary.
TEST(WaitCauseSchedTest, BusyPassThatWaitedForItsCpuAThirdOfTheTimeIsCpuPressure) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  Reaper hogs;
  ASSERT_TRUE(StartHogs(&hogs, {cpus[0]}, 1, 3)) << "a busy process failed to pin";
  testing::PassShares pass;
  const HangRecord h = BusyPassOnTheFirstCpu(cpus, &pass);
  const std::string what =
      CauseKindName(h.cause.kind) + std::string(": ") + h.cause.summary + " (" + pass.Text() + ")";
  const uint64_t waited = pass.Permille(pass.run_delay_ns);
  ASSERT_GE(waited, 250u) << "the busy process did not share the CPU: " << what;
  // Other load on that CPU may make it wait half the pass or more: starved then.
  if (waited <= 450) {
    EXPECT_EQ(h.cause.kind, CauseKind::kPressure) << what;
  } else {
    EXPECT_TRUE(h.cause.kind == CauseKind::kPressure || h.cause.kind == CauseKind::kStarved)
        << what;
  }
  EXPECT_GE(h.cause.run_delay_ms * 5, h.duration_ms - h.threshold_ms) << what;
  if (h.cause.kind == CauseKind::kPressure) {
    EXPECT_EQ(h.cause.pressure_resource, "cpu") << what;
    EXPECT_NE(h.cause.summary.find("machine pressure: cpu"), std::string::npos) << what;
    EXPECT_NE(
        h.cause.summary.find(": waited " + std::to_string(h.cause.run_delay_ms) + " ms for a CPU"),
        std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace hangwatch
