// Deterministic stand-ins for the watchdog's environment, used by the agent's unit tests: a
// manual clock, a sampler that returns scripted stacks, and a listener that records events.
#ifndef HANGWATCH_TESTS_AGENT_FAKES_H_
#define HANGWATCH_TESTS_AGENT_FAKES_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "agent/core/stall_monitor.h"
#include "agent/core/watchdog_env.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent::testing {

constexpr uint64_t kMs = 1'000'000;

// Time moves only when the test says so. The main thread's CPU clock advances with time at
// `cpu_rate` (1.0 = busy, 0.0 = blocked) unless the process is "stopped".
class FakeEnv final : public WatchdogEnv {
 public:
  uint64_t MonotonicNs() override {
    if (stop_at_read > 0 && --stop_at_read == 0) Stop(stop_at_read_ns);
    return mono;
  }
  uint64_t BoottimeNs() override { return boot; }
  int64_t UnixMs() override { return 1'700'000'000'000 + static_cast<int64_t>(mono / kMs); }
  bool ThreadCpuNs(const unwind::ThreadInfo&, uint64_t* out) override {
    *out = cpu;
    return true;
  }
  char SchedState(const unwind::ThreadInfo&) override { return cpu_rate > 0.5 ? 'R' : 'S'; }
  bool DebuggerAttached() override { return debugger; }
  bool OwnSchedStat(uint64_t* cpu_ns, uint64_t* run_delay_ns) override {
    *cpu_ns = own_cpu;
    *run_delay_ns = run_delay;
    return true;
  }
  // The watched thread's own pass timing (Config::time_every_pass), as the test scripts it:
  // `measured` the duration of each ended pass by its state, `running_state` the pass under way
  // since `running_since` (mono). Untimed (empty, 0) by default.
  bool MeasuredPassNs(const RunLoopWord&, uint64_t state, uint64_t* ns) override {
    for (const auto& [s, d] : measured) {
      if (s == state) {
        *ns = d;
        return true;
      }
    }
    return false;
  }
  bool RunningPassNs(const RunLoopWord&, uint64_t state, uint64_t* ns) override {
    if (running_state == 0 || state != running_state) return false;
    *ns = mono - running_since;
    return true;
  }

  // Advances every clock by `ns`; the main thread burns ns * cpu_rate of CPU.
  void Advance(uint64_t ns) {
    mono += ns;
    boot += ns;
    cpu += static_cast<uint64_t>(static_cast<double>(ns) * cpu_rate);
  }
  // The whole process is stopped for `ns`: wall clocks move, CPU does not, nobody waits for
  // a CPU.
  void Stop(uint64_t ns) {
    mono += ns;
    boot += ns;
  }
  // The machine is overloaded for `ns`: the watchdog waits on a run queue throughout, the main
  // thread gets `main_share` of a CPU (if busy).
  void Starve(uint64_t ns, double main_share) {
    mono += ns;
    boot += ns;
    run_delay += ns;
    cpu += static_cast<uint64_t>(static_cast<double>(ns) * cpu_rate * main_share);
  }

  // The process is stopped for stop_at_read_ns just before the stop_at_read-th read of the
  // monotonic clock from now (1: the next one): a stop that lands inside the watchdog's work.
  int stop_at_read = 0;
  uint64_t stop_at_read_ns = 0;
  uint64_t mono = 1'000 * kMs;
  uint64_t boot = 1'000 * kMs;
  uint64_t cpu = 0;
  uint64_t run_delay = 0;  // the watchdog's
  uint64_t own_cpu = 0;    // the watchdog's
  double cpu_rate = 1.0;
  bool debugger = false;
  std::vector<std::pair<uint64_t, uint64_t>> measured;  // (run-loop state, ns)
  uint64_t running_state = 0;
  uint64_t running_since = 0;
};

// Returns `stack` (innermost first) for every capture, or `status` when it is not kOk.
class FakeSampler final : public unwind::ThreadSampler {
 public:
  explicit FakeSampler(FakeEnv* env) : env_(env) {}
  unwind::CaptureStatus Capture(const unwind::ThreadInfo&, unwind::CaptureBuffer* out) override {
    ++captures;
    out->Reset();
    if (status != unwind::CaptureStatus::kOk) return status;
    const size_t n = std::min(stack.size(), out->max_frames());
    std::copy_n(stack.begin(), n, out->frame_storage());
    out->num_frames = n;
    out->regs.pc = n > 0 ? stack[0] : 0;
    out->timestamp_ns = env_->mono;
    out->cpu_time_ns = env_->cpu;
    out->sched_state = env_->SchedState(unwind::ThreadInfo{});
    return unwind::CaptureStatus::kOk;
  }

  std::vector<uintptr_t> stack = {0x1000, 0x2000, 0x3000};
  unwind::CaptureStatus status = unwind::CaptureStatus::kOk;
  int captures = 0;

 private:
  FakeEnv* env_;
};

class RecordingListener final : public MonitorListener {
 public:
  void OnHangOpened(const HangData&) override { ++opened; }
  void OnHangSample(const HangData&) override { ++samples; }
  void OnHangClosed(const HangData& hang) override {
    ++closed;
    last_summary = hang.summary;
    last_stacks = hang.stacks().size();
  }
  void OnHangDiscarded() override { ++discarded; }

  int opened = 0;
  int samples = 0;
  int closed = 0;
  int discarded = 0;
  HangSummary last_summary;
  size_t last_stacks = 0;
};

}  // namespace hangwatch::agent::testing

#endif  // HANGWATCH_TESTS_AGENT_FAKES_H_
