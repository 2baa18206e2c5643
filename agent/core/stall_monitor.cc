#include "agent/core/stall_monitor.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <span>
#include <string>

#include "agent/core/memory_headroom.h"
#include "hang/model/runtime_frame_word.h"
#include "symbols/cfi_or_frame_pointers.h"

namespace hangwatch::agent {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;

uint32_t ToMs32(uint64_t ns) {
  return static_cast<uint32_t>(std::min<uint64_t>(ns / kNsPerMs, UINT32_MAX));
}

}  // namespace

int MonitorStats::BucketFor(uint64_t duration_ns) {
  const uint64_t ms = duration_ns / kNsPerMs;
  if (ms == 0) {
    return 0;
  }
  // Bucket i >= 1 holds [2^(i-1), 2^i) ms: i = bit width of ms.
  int width = 64 - __builtin_clzll(ms);
  return std::min(width, Stats::kBuckets - 1);
}

Stats MonitorStats::Snapshot() const {
  Stats s;
  for (int i = 0; i < Stats::kBuckets; ++i) {
    s.pass_duration_ms_buckets[i] = pass_buckets[i].load(std::memory_order_relaxed);
  }
  s.passes_seen = passes_seen.load(std::memory_order_relaxed);
  s.passes_timed = passes_timed.load(std::memory_order_relaxed);
  s.hangs = hangs.load(std::memory_order_relaxed);
  s.hangs_suppressed = hangs_suppressed.load(std::memory_order_relaxed);
  s.fatal_hangs = fatal_hangs.load(std::memory_order_relaxed);
  s.hangs_unreported = hangs_unreported.load(std::memory_order_relaxed);
  s.samples = samples.load(std::memory_order_relaxed);
  s.failed_captures = failed_captures.load(std::memory_order_relaxed);
  s.early_samples_dropped = early_samples_dropped.load(std::memory_order_relaxed);
  s.stopped_ms = stopped_ns.load(std::memory_order_relaxed) / kNsPerMs;
  return s;
}

namespace {
size_t AtLeastOne(size_t n) { return n > 0 ? n : 1; }
}  // namespace

MonitorStorage::MonitorStorage(const HangLimits& limits, size_t stack_copy_bytes)
    // Room for a runtime's words (agent/samplers/runtime_frames.h): two per frame and a header.
    : buffer(limits.max_frames, stack_copy_bytes, 1 + 2 * limits.max_frames),
      hang(limits),
      cfi_frames(new uintptr_t[AtLeastOne(limits.max_frames)]),
      methods(new symbols::FrameMethod[AtLeastOne(limits.max_frames)]),
      other_buffer(limits.max_frames, stack_copy_bytes),
      other_methods(new symbols::FrameMethod[AtLeastOne(limits.max_frames)]) {}

StallMonitor::StallMonitor(const MonitorOptions& options,
                           const std::atomic<uint64_t>* run_loop_state,
                           const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler,
                           WatchdogEnv* env, LeafNormalizer* normalizer, HangRing* ring,
                           MonitorListener* listener, MonitorStats* stats, size_t stack_copy_bytes)
    : StallMonitor(options, run_loop_state, target, sampler, env, normalizer, ring, listener, stats,
                   std::make_unique<MonitorStorage>(options.limits, stack_copy_bytes), nullptr) {}

StallMonitor::StallMonitor(const MonitorOptions& options,
                           const std::atomic<uint64_t>* run_loop_state,
                           const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler,
                           WatchdogEnv* env, LeafNormalizer* normalizer, HangRing* ring,
                           MonitorListener* listener, MonitorStats* stats, MonitorStorage* storage)
    : StallMonitor(options, run_loop_state, target, sampler, env, normalizer, ring, listener, stats,
                   nullptr, storage) {}

StallMonitor::StallMonitor(const MonitorOptions& options,
                           const std::atomic<uint64_t>* run_loop_state,
                           const unwind::ThreadInfo& target, unwind::ThreadSampler* sampler,
                           WatchdogEnv* env, LeafNormalizer* normalizer, HangRing* ring,
                           MonitorListener* listener, MonitorStats* stats,
                           std::unique_ptr<MonitorStorage> owned, MonitorStorage* storage)
    : options_(options),
      run_loop_state_(run_loop_state),
      target_(target),
      sampler_(sampler),
      env_(env),
      normalizer_(normalizer),
      ring_(ring),
      listener_(listener),
      stats_(stats),
      own_storage_(std::move(owned)),
      buffer_((storage != nullptr ? storage : own_storage_.get())->buffer),
      hang_((storage != nullptr ? storage : own_storage_.get())->hang),
      cfi_frames_((storage != nullptr ? storage : own_storage_.get())->cfi_frames.get()),
      methods_((storage != nullptr ? storage : own_storage_.get())->methods.get()),
      other_buffer_((storage != nullptr ? storage : own_storage_.get())->other_buffer),
      other_methods_((storage != nullptr ? storage : own_storage_.get())->other_methods.get()) {
  const uint64_t s = internal::RunLoopState(*run_loop_state_);
  initial_passes_ = (s + 1) / 2;
  startup_state_ = (s & 1) != 0 ? s : 0;
  set_role("main");
}

void StallMonitor::set_role(const char* role) {
  const size_t n = std::min(strlen(role), sizeof role_ - 1);
  memcpy(role_, role, n);
  role_[n] = '\0';
}

HangPhase StallMonitor::PhaseOf(uint64_t state) const {
  if (shutdown_pass_ != nullptr) {
    // Pairs with the release fence of NoteProcessExit(), made before the pass ended: the end
    // this monitor saw comes with the tag.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (shutdown_pass_->load(std::memory_order_relaxed) == state) return HangPhase::kShutdown;
  }
  return state == startup_state_ ? HangPhase::kStartup : HangPhase::kRun;
}

uint64_t StallMonitor::Effective(uint64_t now) const {
  const uint64_t elapsed = (now > first_seen_ns_ ? now - first_seen_ns_ : 0) + began_before_ns_;
  return elapsed > pass_stopped_ns_ ? elapsed - pass_stopped_ns_ : 0;
}

void StallMonitor::AccountGap(uint64_t gap) {
  if (gap <= options_.oversleep_tolerance_ns) {
    return;  // scheduling noise
  }
  bool stopped = true;
  if (tracking_) {
    uint64_t cpu = 0;
    if (cpu_last_known_ && env_->ThreadCpuNs(target_, &cpu) && cpu >= cpu_last_ns_ &&
        (cpu - cpu_last_ns_) * 2 >= gap) {
      stopped = false;  // the main thread ran: the watchdog was merely starved
    }
    if (stopped) {
      pass_stopped_ns_ += gap;
    }
  }
  if (stopped) {
    stats_->stopped_ns.fetch_add(gap, std::memory_order_relaxed);
    stopped_since_read_ = true;
  }
}

uint64_t StallMonitor::Tick() {
  const uint64_t now = env_->MonotonicNs();
  const uint64_t boot = env_->BoottimeNs();
  // The watchdog's own schedstat costs a read per tick: only while a pass is followed, the
  // only time stopped time changes a result (idle ticks fall back to the lateness rule).
  uint64_t own_cpu = 0;
  uint64_t own_delay = 0;
  const bool own_ok = tracking_ && env_->OwnSchedStat(&own_cpu, &own_delay);

  if (!first_tick_) {
    // Where did the time since the last tick go? Planned sleep, the watchdog's own running and
    // waiting for a CPU (schedstat), bounded capture waits: whatever is left, nobody in this
    // process could run — it was stopped. Without schedstat: lateness past the due time.
    uint64_t unexplained = now - tick_start_ns_;
    const auto credit = [&unexplained](uint64_t ns) { unexplained -= std::min(unexplained, ns); };
    if (own_ok && own_known_ && own_cpu >= own_cpu_ns_ && own_delay >= own_delay_ns_) {
      credit(due_ns_ > last_tick_end_ns_ ? due_ns_ - last_tick_end_ns_ : 0);
      credit(blocked_ns_);
      credit(own_cpu - own_cpu_ns_);
      credit(own_delay - own_delay_ns_);
    } else {
      const uint64_t expected = std::max(due_ns_, last_tick_end_ns_);
      unexplained = now > expected ? now - expected : 0;
    }
    AccountGap(unexplained);
    // Suspend: CLOCK_BOOTTIME moved on while CLOCK_MONOTONIC did not. Already excluded from
    // every duration (they are monotonic); counted for the statistics.
    const uint64_t boot_delta = boot - last_boot_ns_;
    const uint64_t mono_delta = now - last_mono_ns_;
    if (boot_delta > mono_delta && boot_delta - mono_delta > options_.oversleep_tolerance_ns) {
      stats_->stopped_ns.fetch_add(boot_delta - mono_delta, std::memory_order_relaxed);
    }
  }
  tick_start_ns_ = now;
  own_known_ = own_ok;
  own_cpu_ns_ = own_cpu;
  own_delay_ns_ = own_delay;
  blocked_ns_ = 0;
  // The previous look at the run-loop state, to place pass boundaries halfway between looks.
  // Not across a stop: that gap is excluded from the pass as a whole.
  const bool have_prev = !first_tick_ && !stopped_since_read_ && now > last_mono_ns_;
  const uint64_t prev_read = last_mono_ns_;
  stopped_since_read_ = false;
  first_tick_ = false;
  last_boot_ns_ = boot;
  last_mono_ns_ = now;

  const uint64_t state = internal::RunLoopState(*run_loop_state_);
  stats_->passes_seen.store((state + 1) / 2 - initial_passes_, std::memory_order_relaxed);

  if (tracking_ && state != tracked_state_) {
    EndPass(now, /*still_running=*/false,
            have_prev && prev_read >= first_seen_ns_ ? (now - prev_read) / 2 : 0);
  }
  if (!tracking_ && (state & 1) != 0) {
    StartPass(now, state, have_prev ? (now - prev_read) / 2 : 0);
  }

  uint64_t wake = now + options_.check_interval_ns;
  if (tracking_) {
    const uint64_t eff = Effective(now);
    bool sampled = false;
    if (eff >= options_.early_ns && eff >= next_sample_ns_) {
      TakeSample(eff);
      sampled = true;
      next_sample_ns_ += options_.sample_interval_ns;
      if (next_sample_ns_ <= eff) {
        next_sample_ns_ = eff + options_.sample_interval_ns;
      }
    } else {
      uint64_t cpu = 0;
      cpu_last_known_ = env_->ThreadCpuNs(target_, &cpu);
      if (cpu_last_known_) {
        cpu_last_ns_ = cpu;
      }
    }
    if (!declared_ && eff >= options_.threshold_ns) {
      declared_ = true;
      // Its name as it is now (a thread may name itself after it registered).
      env_->ThreadName(target_, hang_.summary.thread_name);
      listener_->OnHangOpened(hang_);
      if (jit_names_ != nullptr) jit_names_->HangOpened(hang_.summary.tid);
    } else if (declared_ && sampled) {
      listener_->OnHangSample(hang_);
    }
    const uint64_t next_eff = eff < options_.early_ns ? options_.early_ns : next_sample_ns_;
    wake = std::min(wake, now + (next_eff > eff ? next_eff - eff : 0));
  }
  due_ns_ = wake;
  // A tick that followed a pass may have waited for a capture: the next one's lateness starts
  // where it ended. An idle tick does nothing that waits, so its own start is the mark: a stop
  // (SIGSTOP) that lands inside it, before its end is read, would otherwise vanish.
  last_tick_end_ns_ = tracking_ ? env_->MonotonicNs() : now;
  return wake;
}

void StallMonitor::Finish(bool watched_thread_exited) {
  // A last look first: a stop that just ended, or a pass that just ended, is accounted for as
  // on any tick.
  if (!first_tick_) {
    Tick();
  }
  if (!tracking_) {
    return;
  }
  const uint64_t now = env_->MonotonicNs();
  const uint64_t state = internal::RunLoopState(*run_loop_state_);
  if (state != tracked_state_) {
    EndPass(now, /*still_running=*/false, 0);
  } else if (watched_thread_exited && declared_ && hang_.summary.samples > 0) {
    // A hang sampled while its thread ran, which then ended inside it: reported, as ending
    // when a sample first found the thread gone.
    const uint64_t eff = Effective(now);
    const uint64_t ended = thread_ended_effective_ns_;
    EndPass(now, /*still_running=*/true, ended != 0 && ended < eff ? eff - ended : 0);
  } else if (watched_thread_exited) {
    // The thread ended (pthread_exit) inside a pass it never closed: without a stack of it,
    // the "hang" is only the time since it ended. A hang sampled while the thread ran is real:
    // it is closed below, as still running when the thread ended.
    const uint64_t n = hang_.summary.samples + hang_.summary.failed_samples;
    stats_->early_samples_dropped.fetch_add(n, std::memory_order_relaxed);
    if (declared_) listener_->OnHangDiscarded();
    declared_ = false;
    tracking_ = false;
    stats_->tracked_state.store(0, std::memory_order_relaxed);
  } else if (declared_) {
    EndPass(now, /*still_running=*/true, 0);
  } else {
    const uint64_t n = hang_.summary.samples + hang_.summary.failed_samples;
    stats_->early_samples_dropped.fetch_add(n, std::memory_order_relaxed);
    tracking_ = false;
    stats_->tracked_state.store(0, std::memory_order_relaxed);
  }
}

void StallMonitor::StartPass(uint64_t now, uint64_t state, uint64_t began_before_ns) {
  tracking_ = true;
  cause_started_ = false;
  stats_->tracked_state.store(state, std::memory_order_relaxed);
  began_before_ns_ = began_before_ns;
  thread_ended_effective_ns_ = 0;
  declared_ = false;
  tracked_state_ = state;
  first_seen_ns_ = now;
  pass_stopped_ns_ = 0;
  next_sample_ns_ = options_.early_ns;
  hang_.Clear();
  HangSummary& s = hang_.summary;
  s.pid = options_.pid;
  s.tid = target_.tid;
  memcpy(s.thread_role, role_, sizeof s.thread_role);
  s.start_unix_ms = env_->UnixMs();
  s.threshold_ms = ToMs32(options_.threshold_ns);
  s.sample_interval_ms = ToMs32(options_.sample_interval_ns);
  cpu_start_known_ = env_->ThreadCpuNs(target_, &cpu_start_ns_);
  // Baseline for the next tick's accounting of where the time went (see Tick()).
  own_known_ = env_->OwnSchedStat(&own_cpu_ns_, &own_delay_ns_);
  cpu_last_known_ = cpu_start_known_;
  cpu_last_ns_ = cpu_start_ns_;
  cpu_sample_known_ = cpu_start_known_;
  cpu_sample_ns_ = cpu_start_ns_;
}

void StallMonitor::EndPass(uint64_t now, bool still_running, uint64_t ended_before_ns) {
  // The best estimate of the pass's length: from halfway between the last look that did not
  // see it and the first that did, to halfway between the last look that saw it running and
  // the first that did not; stopped time excluded.
  const uint64_t eff = Effective(now);
  uint64_t duration = eff > ended_before_ns ? eff - ended_before_ns : 0;
  // Better: what the watched thread measured, when it times its passes. A pass that ended was
  // measured whole; one still running (the monitor stops) is measured up to now, unless its
  // thread ended inside it (then the estimate of when is all there is).
  uint64_t measured = 0;
  const bool has_measure =
      !still_running
          ? env_->MeasuredPassNs(RunLoopWord{run_loop_state_, pass_timer_}, tracked_state_,
                                 &measured)
          : ended_before_ns == 0 && env_->RunningPassNs(RunLoopWord{run_loop_state_, pass_timer_},
                                                        tracked_state_, &measured);
  if (has_measure) duration = measured > pass_stopped_ns_ ? measured - pass_stopped_ns_ : 0;
  tracking_ = false;
  stats_->tracked_state.store(0, std::memory_order_relaxed);
  if (!still_running) {
    stats_->pass_buckets[MonitorStats::BucketFor(duration)].fetch_add(1, std::memory_order_relaxed);
    stats_->passes_timed.fetch_add(1, std::memory_order_relaxed);
  }
  if (!declared_ && duration < options_.threshold_ns) {
    const uint64_t n = hang_.summary.samples + hang_.summary.failed_samples;
    if (n > 0) {
      stats_->early_samples_dropped.fetch_add(n, std::memory_order_relaxed);
    }
    return;
  }
  declared_ = false;

  HangSummary& s = hang_.summary;
  s.duration_ns = duration;
  s.stopped_ns = pass_stopped_ns_;
  s.phase = PhaseOf(tracked_state_);
  uint64_t cpu_end = 0;
  bool cpu_end_known = cpu_start_known_ && env_->ThreadCpuNs(target_, &cpu_end);
  if (cpu_start_known_ && !cpu_end_known && cpu_last_known_) {
    // The thread is gone already (a watched thread that ended right after its pass): its CPU
    // time as of the last look, within a sample interval of the end.
    cpu_end = cpu_last_ns_;
    cpu_end_known = true;
  }
  if (cpu_end_known && cpu_end >= cpu_start_ns_) {
    // CPU is measured over the sighted part of the pass; its share applies to the estimate.
    const uint64_t seen = Effective(now) - std::min(Effective(now), began_before_ns_);
    const uint64_t cpu = std::min(cpu_end - cpu_start_ns_, seen);
    s.cpu_ns =
        seen > 0 ? static_cast<uint64_t>(static_cast<unsigned __int128>(cpu) * duration / seen) : 0;
    s.cpu_ns = std::min(s.cpu_ns, duration);
    s.cpu_known = true;
  }
  s.hang_id = next_hang_id_++;

  if (!options_.report_under_debugger && env_->DebuggerAttached()) {
    stats_->hangs_suppressed.fetch_add(1, std::memory_order_relaxed);
    listener_->OnHangDiscarded();
    return;
  }
  if (cause_probe_ != nullptr && cause_started_) cause_probe_->HangEnded(target_, &hang_.cause);
  if (context_probe_ != nullptr) context_probe_->HangEnded(&hang_.context);
  ring_->Push(hang_);
  stats_->hangs.fetch_add(1, std::memory_order_relaxed);
  listener_->OnHangClosed(hang_);
}

void StallMonitor::UnwindCapture(bool near_memory_limit) {
  num_methods_ = UnwindBuffer(&buffer_, methods_, near_memory_limit);
  if (runtime_ != nullptr) {
    static_assert(sizeof(FrameMethod) == sizeof(uint8_t));
    num_methods_ = runtime_->Merge(&buffer_, std::min(num_methods_, buffer_.num_frames),
                                   reinterpret_cast<uint8_t*>(methods_));
  }
}

size_t StallMonitor::UnwindBuffer(unwind::CaptureBuffer* buf, symbols::FrameMethod* methods,
                                  bool near_memory_limit) {
  // Near an address-space limit, libdwfl's lazy loading of a module's ELF file and CFI may fail
  // where libdw does not survive it: the frame-pointer frames then (memory_headroom.h).
  symbols::CfiUnwinder* cfi = buf->stack_size == 0 || near_memory_limit ? nullptr : cfi_;
  if (cfi != nullptr && !cfi->Refresh(/*force=*/false).ok()) {
    cfi = nullptr;  // keep the frame-pointer frames
  }
  symbols::UnwindStart start;
  start.regs = buf->regs;
  // /proc gives pc and sp only.
  start.fp_known = buf->method != SampleMethod::kProc;
  const unwind::MemoryView view = buf->stack_view();
  // Into the buffers sized at construction: the frame-pointer frames stay in the capture
  // buffer until the CFI walk (in cfi_frames_) wins.
  const symbols::ChosenFrames chosen = symbols::UnwindCfiOrFramePointers(
      cfi, start, std::span<const unwind::MemoryView>(&view, 1), buf->frame_storage(),
      buf->num_frames, buf->frames_truncated, cfi_frames_, methods, buf->max_frames());
  if (chosen.cfi) {
    buf->num_frames = chosen.num_frames;
    buf->frames_truncated = chosen.truncated;
  }
  return chosen.num_frames;
}

// The start of the function holding the interrupted pc (LeafNormalizer), or the pc itself when
// naming it needs memory the process does not have (a module's symbol table read on first use).
uintptr_t StallMonitor::LeafOf(uintptr_t pc, bool near_memory_limit) {
  if (near_memory_limit) return pc;
  try {
    return normalizer_->FunctionStart(pc);
  } catch (const std::bad_alloc&) {
    return pc;
  }
}

void StallMonitor::TakeSample(uint64_t effective_ns) {
  const uint64_t before = env_->MonotonicNs();
  if (cause_probe_ != nullptr && !cause_started_) {
    cause_started_ = true;  // once per pass, at its first sample (cause resolvers' baseline)
    cause_probe_->HangStarted(target_);
  }
  if (runtime_ != nullptr) {
    runtime_->Watch(target_);
    runtime_->BeforeCapture();
  }
  const unwind::CaptureStatus status = sampler_->Capture(target_, &buffer_);
  // Waiting for the target is planned, up to the capture's timeout; anything longer (the
  // process was stopped meanwhile) stays unexplained for the next tick's accounting.
  blocked_ns_ += std::min(env_->MonotonicNs() - before, options_.capture_wait_ns);
  if (status == unwind::CaptureStatus::kSignalTaken && !signal_taken_told_) {
    signal_taken_told_ = true;
    listener_->OnSamplingSignalTaken();
  }
  const bool ok = status == unwind::CaptureStatus::kOk && buffer_.num_frames > 0;
  const bool near_memory_limit = ok && NearMemoryLimit();
  if (ok) {
    UnwindCapture(near_memory_limit);
  }
  uint64_t cpu = 0;
  bool cpu_ok = false;
  char state = '?';
  if (ok) {
    cpu = buffer_.cpu_time_ns;
    cpu_ok = cpu != 0;
    state = buffer_.sched_state;
  }
  if (!cpu_ok) {
    cpu_ok = env_->ThreadCpuNs(target_, &cpu);
  }
  if (state == '?' || state == 0) {
    state = env_->SchedState(target_);
  }
  if (!ok && (status == unwind::CaptureStatus::kThreadExited || state == 'Z' || state == 'X')) {
    // The thread has ended (pthread_exit inside the pass): nothing more of it to sample, and
    // the hang, if any, ended here (Finish).
    if (thread_ended_effective_ns_ == 0) thread_ended_effective_ns_ = effective_ns;
    return;
  }

  const uint64_t delta =
      cpu_ok && cpu_sample_known_ && cpu >= cpu_sample_ns_ ? cpu - cpu_sample_ns_ : 0;
  const size_t n = ok ? std::min(buffer_.num_frames, buffer_.max_frames()) : 0;
  // A Python leaf counts by its function (its code object), as a native one by its start.
  const uintptr_t leaf = n == 0 ? 0
                         : IsRuntimeWord(buffer_.frames()[0])
                             ? RuntimeLeafKey(buffer_.frames()[0])
                             : LeafOf(buffer_.frames()[0], near_memory_limit);
  hang_.AddSample(ToMs32(effective_ns), ok ? buffer_.frames() : nullptr, n, leaf, delta, state, ok,
                  n <= num_methods_ ? methods_ : nullptr, buffer_.method);
  if (ok) hang_.summary.pause_ns += buffer_.pause_ns;
  if (cause_probe_ != nullptr && (state == 'S' || state == 'D')) ProbeCause(state);
  if (context_probe_ != nullptr) {
    context_probe_->Sample(tracked_state_, env_->MonotonicNs(), &hang_.context);
  }
  if (ok) {
    stats_->samples.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats_->failed_captures.fetch_add(1, std::memory_order_relaxed);
  }
  if (cpu_ok) {
    cpu_last_known_ = cpu_sample_known_ = true;
    cpu_last_ns_ = cpu_sample_ns_ = cpu;
  }
}

void StallMonitor::ProbeCause(char state) {
  const uint64_t before = env_->MonotonicNs();
  SampledThread sampled;
  sampled.state = state;
  sampled.syscall_known = buffer_.syscall_known;
  sampled.syscall_nr = buffer_.syscall_nr;
  sampled.syscall_args = buffer_.syscall_args;
  if (cause_probe_->Probe(target_, sampled, this, &sample_cause_)) {
    const size_t n = hang_.timeline_size();
    sample_cause_.main_stack = n > 0 ? hang_.timeline()[n - 1].stack : -1;
    hang_.NoteCause(sample_cause_);
  }
  // Owners' captures wait like the main thread's: planned, up to their timeouts.
  blocked_ns_ +=
      std::min(env_->MonotonicNs() - before, options_.capture_wait_ns * (1 + kCauseMaxThreads));
}

size_t StallMonitor::CaptureOther(const unwind::ThreadInfo& thread, uintptr_t* frames,
                                  FrameMethod* methods, size_t max_frames, SampledThread* sampled) {
  // An owner asleep since its last capture has the same stack: its frames are used again.
  const bool again = other_sampler_ != nullptr && other_captured_tid_ == thread.tid &&
                     other_sampler_->UnchangedSinceLastRead(thread);
  if (!again) {
    other_captured_tid_ = 0;
    const unwind::CaptureStatus status = other_sampler_ != nullptr
                                             ? other_sampler_->Capture(thread, &other_buffer_)
                                             : sampler_->Capture(thread, &other_buffer_);
    if (status != unwind::CaptureStatus::kOk || other_buffer_.num_frames == 0) {
      *sampled = SampledThread{};
      sampled->state = other_buffer_.sched_state;
      return 0;
    }
    other_walked_ = UnwindBuffer(&other_buffer_, other_methods_, NearMemoryLimit());
    if (other_buffer_.method == SampleMethod::kProc) other_captured_tid_ = thread.tid;
  }
  *sampled = SampledThread{};
  sampled->state = other_buffer_.sched_state;
  sampled->syscall_known = other_buffer_.syscall_known;
  sampled->syscall_nr = other_buffer_.syscall_nr;
  sampled->syscall_args = other_buffer_.syscall_args;
  sampled->sp = other_buffer_.regs.sp;
  const size_t n = std::min({other_buffer_.num_frames, max_frames, other_buffer_.max_frames()});
  std::copy_n(other_buffer_.frames(), n, frames);
  for (size_t i = 0; i < n; ++i) {
    methods[i] = i < other_walked_ ? other_methods_[i] : FrameMethod::kUnknown;
  }
  return n;
}

}  // namespace hangwatch::agent
