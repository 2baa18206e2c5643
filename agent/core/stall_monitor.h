// StallMonitor: the watchdog's logic, one wake-up at a time.
//
// Each Tick() reads the run-loop state word (odd = a pass is running, +2 per pass), follows the
// current pass, samples it once it has run `early` (a fraction of the threshold), declares a
// hang when it crosses the threshold, and closes the hang when the pass ends. Tick() returns
// when it wants to be called again; the thread around it (the watchdog thread in agent.cc,
// sleeping in watchdog_sleep.h) only sleeps.
//
// Timing is the watchdog's (unless passes are timed, below, the main thread reads no clock): a
// pass began between the last tick that did not see it and the first that did, and ended
// between the last tick that saw it running and the first that did not; the monitor takes the
// midpoints, so a duration is off by at most half a check interval at the start and half a
// sample interval at the end (plus the watchdog's scheduling delays). All pass times (early
// sampling, threshold, timeline) count from that estimated start, stopped time excluded.
//
// With passes timed (Config::time_every_pass) a hang's duration is the one the watched thread
// measured (WatchdogEnv::MeasuredPassNs, for passes over 16 ms; RunningPassNs for a hang still
// running when the monitor stops), stopped time excluded; the estimate is the fallback.
//
// Phases: the pass under way when the monitor was made (before the loop's first wait) is the
// start-up pass; the one the watched thread was in when it called exit() or _exit() is the
// shutdown pass (set_shutdown_pass); their hangs are tagged so (HangSummary::phase).
//
// Stopped time: when a tick comes much later than it was due (the whole process was stopped by
// SIGSTOP or a debugger, or could not run), and the main thread's CPU clock did not advance
// through that gap at the rate it would have if it had been running, the gap is excluded from
// the pass. A pass made only of stopped time is never a hang. Machine suspend needs no special
// case: CLOCK_MONOTONIC stands still during it (CLOCK_BOOTTIME, which does not, measures it for
// the statistics).
#ifndef HANGWATCH_AGENT_CORE_STALL_MONITOR_H_
#define HANGWATCH_AGENT_CORE_STALL_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "agent/context/context_probe.h"
#include "agent/core/hang_ring.h"
#include "agent/core/watchdog_env.h"
#include "agent/samplers/jit_code_names.h"
#include "agent/samplers/leaf_normalizer.h"
#include "agent/samplers/runtime_frames.h"
#include "agent/samplers/wait_cause_probe.h"
#include "hang/model/hang_data.h"
#include "hangwatch/hangwatch.h"
#include "symbols/cfi_unwinder.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

struct MonitorOptions {
  uint64_t threshold_ns = 250'000'000;
  uint64_t sample_interval_ns = 25'000'000;
  uint64_t early_ns = 125'000'000;  // sampling starts when a pass has run this long
  uint64_t check_interval_ns = 25'000'000;
  // A tick later than due by more than this is treated as a possible stop.
  uint64_t oversleep_tolerance_ns = 100'000'000;
  // A capture blocks the watchdog at most this long (the sampler's timeout, plus slack).
  uint64_t capture_wait_ns = 25'000'000;
  bool report_under_debugger = false;
  HangLimits limits;
  int64_t pid = 0;
};

// Counters, readable from any thread while the monitor runs.
struct MonitorStats {
  std::atomic<uint64_t> pass_buckets[Stats::kBuckets] = {};
  std::atomic<uint64_t> passes_seen{0};
  std::atomic<uint64_t> passes_timed{0};
  std::atomic<uint64_t> hangs{0};
  std::atomic<uint64_t> hangs_suppressed{0};
  std::atomic<uint64_t> fatal_hangs{0};
  std::atomic<uint64_t> hangs_unreported{0};
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> failed_captures{0};
  std::atomic<uint64_t> early_samples_dropped{0};
  std::atomic<uint64_t> stopped_ns{0};
  // The run-loop state word of the pass the watchdog is following, 0 when none (for tests).
  std::atomic<uint64_t> tracked_state{0};

  Stats Snapshot() const;
  static int BucketFor(uint64_t duration_ns);
};

// Receives the monitor's events, on the watchdog thread.
class MonitorListener {
 public:
  virtual ~MonitorListener() = default;
  // The pass crossed the threshold; `hang` holds the early samples.
  virtual void OnHangOpened(const HangData& hang) { (void)hang; }
  // A sample was added to an open hang (its timeline entry is the last one, when it fit).
  virtual void OnHangSample(const HangData& hang) { (void)hang; }
  // The hang closed and is in the ring.
  virtual void OnHangClosed(const HangData& hang) = 0;
  // The open hang was dropped (a debugger is attached and reporting under it is off).
  virtual void OnHangDiscarded() {}
  // The application replaced the sampling signal's handler (CaptureStatus::kSignalTaken): no
  // signal is sent any more; threads asleep in the kernel are still read through /proc. Once.
  virtual void OnSamplingSignalTaken() {}
};

// What a monitor fills while it follows a pass: the hang, the capture buffers and the frames'
// methods, sized by the limits. Separate from the monitor so that the agent allocates it for
// every watched thread at Start() and a monitor made for a thread later allocates nothing.
struct MonitorStorage {
  MonitorStorage(const HangLimits& limits, size_t stack_copy_bytes);
  unwind::CaptureBuffer buffer;
  HangData hang;
  std::unique_ptr<uintptr_t[]> cfi_frames;  // max_frames each
  std::unique_ptr<symbols::FrameMethod[]> methods;
  unwind::CaptureBuffer other_buffer;  // a lock owner's capture
  std::unique_ptr<symbols::FrameMethod[]> other_methods;
};

class StallMonitor final : private OtherThreadCapturer {
 public:
  // Everything is borrowed and must outlive the monitor. Allocates the hang storage and the
  // capture buffer; Tick() allocates nothing (except inside the CFI unwinder, when one is set:
  // libdwfl allocates while it unwinds, on this thread, never on the capture path).
  StallMonitor(const MonitorOptions& options, const std::atomic<uint64_t>* run_loop_state,
               const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler, WatchdogEnv* env,
               LeafNormalizer* normalizer, HangRing* ring, MonitorListener* listener,
               MonitorStats* stats, size_t stack_copy_bytes = 0);
  // The same over `storage` (made with options.limits; borrowed): allocates nothing.
  StallMonitor(const MonitorOptions& options, const std::atomic<uint64_t>* run_loop_state,
               const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler, WatchdogEnv* env,
               LeafNormalizer* normalizer, HangRing* ring, MonitorListener* listener,
               MonitorStats* stats, MonitorStorage* storage);

  // The watched thread's pass timer (with Config::time_every_pass), for the durations it
  // measured; default: the main thread's. Borrowed; set before the first Tick().
  void set_pass_timer(const internal::PassTimer* timer) { pass_timer_ = timer; }
  // Which thread this is, for its hangs: its role ("main", "render", ...; cut to 31 bytes).
  // Its kernel name is read when a hang opens. Set before the first Tick().
  void set_role(const char* role);
  const unwind::ThreadInfo& target() const { return target_; }

  // One wake-up. Returns the CLOCK_MONOTONIC time (env) of the next wanted wake-up.
  uint64_t Tick();

  // Last tick, when stopping: closes the pass if it has ended; a hang still running is closed
  // as it stands (so it is not lost), a slow pass below the threshold is dropped. When the
  // watched thread has exited (pthread_exit), the pass it left "running" is no hang: dropped,
  // and a hang already declared for it is discarded.
  void Finish(bool watched_thread_exited = false);

  // Each capture is unwound again, here on the watchdog thread (after the capture returned,
  // never while the target is paused), with CFI over its stack copy (symbols/cfi_unwinder.h),
  // and its frames replaced by the result. nullptr (default): the capture's own frame-pointer
  // frames are kept. Borrowed; set before the first Tick().
  void set_cfi_unwinder(symbols::CfiUnwinder* unwinder) { cfi_ = unwinder; }
  // Why a blocked sample waited (agent/samplers/wait_cause_probe.h): asked after each sample that
  // found the main thread asleep; lock owners are captured with the same sampler and unwinder.
  // nullptr (default): no cause. Borrowed; set before the first Tick().
  void set_wait_cause_probe(WaitCauseProbe* probe) { cause_probe_ = probe; }
  // What the pass was serving and whether input waited (agent/context/context_probe.h): asked
  // at each sample, told when the hang closes. nullptr (default): no context. Borrowed; set
  // before the first Tick().
  void set_context_probe(ContextProbe* probe) { context_probe_ = probe; }
  // The sampler of the other threads (lock owners): a second one keeps the main thread's and
  // the owner's /proc files open between samples, and tells when an owner has not run since its
  // last capture (whose frames are then used again). nullptr: the main thread's sampler.
  void set_other_thread_sampler(OwnerSampler* sampler) { other_sampler_ = sampler; }
  // A language runtime's frames (the Python frames, agent/samplers/python_stacks.h) merged into
  // each sample of the watched thread after it is unwound. nullptr (default): native frames only.
  // Borrowed; set before the first Tick().
  void set_runtime_frames(RuntimeFrames* runtime) { runtime_ = runtime; }
  // Told when a hang opens (a JVM asked for its compiled code's names); may be null.
  void set_jit_names(JitCodeNames* jit_names) { jit_names_ = jit_names; }
  // Which method produced each frame of the last successful sample (pc, fp, cfi, lr).
  std::span<const symbols::FrameMethod> last_frame_methods() const {
    return {methods_, num_methods_};
  }

  // Where the run-loop state of the watched thread's shutdown pass appears (exit_flush.h's
  // ShutdownPassState()), 0 until it exits. nullptr (default): no pass is a shutdown pass.
  // Borrowed; set before the first Tick().
  void set_shutdown_pass(const std::atomic<uint64_t>* state) { shutdown_pass_ = state; }

  bool in_hang() const { return declared_; }
  const HangData& open_hang() const { return hang_; }

 private:
  StallMonitor(const MonitorOptions& options, const std::atomic<uint64_t>* run_loop_state,
               const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler, WatchdogEnv* env,
               LeafNormalizer* normalizer, HangRing* ring, MonitorListener* listener,
               MonitorStats* stats, std::unique_ptr<MonitorStorage> owned, MonitorStorage* storage);
  // began_before_ns / ended_before_ns: half the time since the previous look, the estimated
  // part of the pass before its first sighting / after its end.
  void StartPass(uint64_t now, uint64_t state, uint64_t began_before_ns);
  void EndPass(uint64_t now, bool still_running, uint64_t ended_before_ns);
  void TakeSample(uint64_t effective_ns);
  // Replaces buffer_'s frames by the CFI unwinder's (when set and the capture copied stack) and
  // records each frame's method.
  void UnwindCapture(bool near_memory_limit);
  // The same for any capture buffer, the methods into `methods`; returns the number of frames
  // of `buf` afterwards (CFI's when it won).
  size_t UnwindBuffer(unwind::CaptureBuffer* buf, symbols::FrameMethod* methods,
                      bool near_memory_limit);
  // OtherThreadCapturer: a lock owner, captured and unwound like the main thread.
  size_t CaptureOther(const unwind::ThreadInfo& thread, uintptr_t* frames, FrameMethod* methods,
                      size_t max_frames, SampledThread* sampled) override;
  // After a blocked sample: its cause, into the hang.
  void ProbeCause(char state);
  uintptr_t LeafOf(uintptr_t pc, bool near_memory_limit);
  // Time since the estimated start of the pass, stopped time excluded.
  uint64_t Effective(uint64_t now) const;
  // `gap` ns of the last interval between ticks are unexplained: the watchdog neither slept as
  // planned, nor ran, nor waited for a CPU, nor waited on a (bounded) capture. Beyond the
  // tolerance the process was stopped — the gap is excluded from the pass and counted as
  // stopped time — unless the main thread's CPU clock advanced through at least half of it.
  void AccountGap(uint64_t gap);
  HangPhase PhaseOf(uint64_t state) const;

  const MonitorOptions options_;
  const std::atomic<uint64_t>* run_loop_state_;
  const unwind::ThreadInfo target_;
  unwind::ThreadSampler* sampler_;
  WatchdogEnv* env_;
  LeafNormalizer* normalizer_;
  HangRing* ring_;
  MonitorListener* listener_;
  MonitorStats* stats_;

  std::unique_ptr<MonitorStorage> own_storage_;  // when made without one
  unwind::CaptureBuffer& buffer_;
  HangData& hang_;
  uintptr_t* cfi_frames_;
  symbols::FrameMethod* methods_;
  unwind::CaptureBuffer& other_buffer_;
  symbols::FrameMethod* other_methods_;
  const internal::PassTimer* pass_timer_ = &internal::g_pass_timer;
  char role_[32] = {};
  symbols::CfiUnwinder* cfi_ = nullptr;
  const std::atomic<uint64_t>* shutdown_pass_ = nullptr;
  uint64_t startup_state_ = 0;  // the pass under way at construction (odd), 0 when none
  size_t num_methods_ = 0;
  WaitCauseProbe* cause_probe_ = nullptr;
  ContextProbe* context_probe_ = nullptr;
  RuntimeFrames* runtime_ = nullptr;
  JitCodeNames* jit_names_ = nullptr;
  OwnerSampler* other_sampler_ = nullptr;
  pid_t other_captured_tid_ = 0;  // whose capture other_buffer_ holds (unwound), 0 none
  size_t other_walked_ = 0;
  WaitCause sample_cause_;
  bool cause_started_ = false;  // HangStarted told for the pass tracked

  // Ticks.
  bool first_tick_ = true;
  uint64_t due_ns_ = 0;  // when the last Tick() asked to be called
  uint64_t last_tick_end_ns_ = 0;
  uint64_t last_boot_ns_ = 0;
  uint64_t last_mono_ns_ = 0;
  uint64_t tick_start_ns_ = 0;  // when the last Tick() began
  bool own_known_ = false;      // the watchdog's own schedstat at the last tick:
  uint64_t own_cpu_ns_ = 0;
  uint64_t own_delay_ns_ = 0;
  uint64_t blocked_ns_ = 0;  // bounded waits (captures) during the last tick
  uint64_t initial_passes_ = 0;
  uint64_t next_hang_id_ = 0;
  bool signal_taken_told_ = false;

  // The pass being followed.
  bool stopped_since_read_ = false;  // a gap counted as stopped since the last state read
  bool tracking_ = false;
  uint64_t began_before_ns_ = 0;
  // When a sample first found the watched thread ended (gone, or a zombie), in the pass's
  // effective time; 0 while it runs. A hang its thread left unclosed ends there (Finish).
  uint64_t thread_ended_effective_ns_ = 0;
  bool declared_ = false;
  uint64_t tracked_state_ = 0;
  uint64_t first_seen_ns_ = 0;
  uint64_t pass_stopped_ns_ = 0;
  bool cpu_start_known_ = false;
  uint64_t cpu_start_ns_ = 0;
  bool cpu_last_known_ = false;
  uint64_t cpu_last_ns_ = 0;  // main-thread CPU at the last sample / tick of this pass
  bool cpu_sample_known_ = false;
  uint64_t cpu_sample_ns_ = 0;   // main-thread CPU at the last sample (or the pass start)
  uint64_t next_sample_ns_ = 0;  // effective time of the next sample
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_STALL_MONITOR_H_
