// The public API (include/hangwatch/hangwatch.h): the agent object, its watchdog thread, and
// the list of sinks it reports to (sinks/hang_sink.h).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "agent/core/agent_internal.h"
#include "agent/core/clock_now.h"
#include "agent/core/config_options.h"
#include "agent/core/exit_flush.h"
#include "agent/core/hang_ring.h"
#include "agent/core/labels.h"
#include "agent/core/lag_reporter.h"
#include "agent/core/memory_headroom.h"
#include "agent/core/pass_timer.h"
#include "agent/core/sink_dispatch.h"
#include "agent/core/stall_monitor.h"
#include "agent/core/thread_monitors.h"
#include "agent/core/watchdog_sleep.h"
#include "agent/samplers/platform_sampler.h"
#include "agent/sinks/callback_sink.h"
#include "agent/sinks/hang_sink.h"
#include "agent/sinks/jsonl_sink.h"
#include "agent/sinks/sinks_from_config.h"
#include "agent/sinks/spdlog_reporter.h"
#include "agent/threads/thread_registry.h"
#include "hang/model/materialize.h"
#include "hang/model/process_name.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "spdlog/spdlog.h"
#include "symbols/cfi_unwinder.h"
#include "symbols/module_map.h"
#include "unwind/thread_capture.h"

namespace hangwatch {
namespace agent {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;
constexpr uint64_t kLivenessCheckNs = 1'000'000'000;

class Agent final : public MonitorListener, public ThreadMonitors::Reporter {
 public:
  Agent(const Config& config, const MonitorOptions& options)
      : config_(config), options_(options), ring_(config.ring_capacity, options.limits) {}

  ~Agent() override { StopThread(); }

  // fork() from another thread waits, in PrepareFork(), until the watchdog is between two
  // ticks: then it holds no lock of ours, of libc's stdio, of spdlog or of the symbolizer's
  // caches, and the child inherits none of them locked. User callbacks run outside (they may
  // wait for the thread that forks).
  void LockForFork() { busy_mu_.lock(); }
  void UnlockAfterFork() { busy_mu_.unlock(); }

  // In the child of fork(): this agent is the parent's. Its watchdog thread does not exist
  // here, its mutexes and condition variable may be held or waited on by threads that do not
  // exist either, so it is never touched again and never destroyed (its destructor would wait
  // forever). What it holds of the process (the sampling signal, descriptors) is given back.
  // Async-signal-safe: system calls and atomic stores only.
  void AbandonAfterFork() {
    stop_.store(true);  // the forking thread may be the watchdog itself (a callback that forks)
    if (signal_sampler_ != nullptr) {
      ForgetPlatformSamplerAfterFork();
    }
    sinks_.ReleaseAfterFork();
    if (open_file_ != nullptr) {
      open_file_->ReleaseAfterFork();
    }
    if (threads_ != nullptr) threads_->ReleaseAfterFork();
  }

  Status Init(StartHooks hooks) {
    // The calling thread is "main": its BeginWork() acts on the main word (threads.h).
    internal::t_run_loop_state = &internal::g_run_loop_state;
    initial_state_ = internal::RunLoopState(internal::g_run_loop_state);
    if (!unwind::RegisterCurrentThread(&main_)) {
      return Status::Error("hangwatch: cannot register the calling thread for sampling");
    }
    SetMainThread(pthread_self());
    process_ = MainExecutablePath();
    logger_ = config_.logger;
    if (logger_ == nullptr && config_.log_hangs) {
      logger_ = DefaultLogger();
    }
    sinks_.set_logger(logger_);
    host_ = HostName();
    if (const char* env = LabelsVariable(); env != nullptr) {
      std::string error;
      if (!ParseLabels(env, &labels_, &error) && logger_) {
        logger_->warn("hangwatch: HANGWATCH_LABELS: {}", error);
      }
    }
    for (const auto& [k, v] : config_.labels) labels_[k] = v;

    if (std::string error; !SinksFromConfig(config_, logger_, &sinks_.sinks(), &error)) {
      return Status::Error("hangwatch: " + error);
    }
    if (!config_.open_hang_path.empty()) {
      std::string error;
      ReadFatalHang(config_.open_hang_path);
      open_file_ = OpenHangFile::Create(config_.open_hang_path, options_.limits, &error);
      if (open_file_ == nullptr) {
        return Status::Error("hangwatch: " + error);
      }
      // The other threads' files of the last run (thread_monitors.h), now that the lock on the
      // main one says no live process uses them.
      for (const std::string& path : ThreadOpenHangPaths(config_.open_hang_path)) {
        ReadFatalHang(path);
        unlink(path.c_str());
      }
    }

    env_ = hooks.env ? std::move(hooks.env) : MakeSystemWatchdogEnv();
    normalizer_ = hooks.normalizer ? std::move(hooks.normalizer) : MakeSymbolizingLeafNormalizer();
    if (hooks.sampler) {
      sampler_ = std::move(hooks.sampler);
    } else {
      // This platform's (agent/samplers/platform_sampler.h): a signal behind /proc reads on Linux,
      // Mach thread suspension on Apple.
      PlatformSampler platform;
      if (std::string error; !MakePlatformSampler(config_, &platform, &error)) {
        return Status::Error("hangwatch: " + error);
      }
      signal_ = platform.signal;
      signal_sampler_ = std::move(platform.signal_sampler);
      sampler_ = std::move(platform.sampler);
      cause_probe_ = std::move(platform.cause_probe);
      other_sampler_ = std::move(platform.other_sampler);
      runtime_frames_ = std::move(platform.runtime_frames);
      for (const std::string& note : platform.notes) {
        if (logger_) logger_->warn("hangwatch: {}", note);
      }
      make_thread_sampler_ = std::move(platform.make_thread_sampler);
      make_cause_probe_ = std::move(platform.make_cause_probe);
      jit_names_ = std::move(platform.jit_names);
    }
    if (config_.stack_copy_bytes > 0) {
      // CFI over the stack copies, on the watchdog thread (symbols/cfi_unwinder.h). Without
      // it (libdwfl could not read this process's modules) the frame-pointer frames stay.
      auto cfi = symbols::CfiUnwinder::ForSelf();
      if (cfi.ok()) cfi_ = std::move(*cfi);
    }
    monitor_ = std::make_unique<StallMonitor>(options_, &internal::g_run_loop_state, main_,
                                              sampler_.get(), env_.get(), normalizer_.get(), &ring_,
                                              this, &stats_, config_.stack_copy_bytes);
    monitor_->set_cfi_unwinder(cfi_.get());
    monitor_->set_shutdown_pass(ShutdownPassState());
    monitor_->set_wait_cause_probe(cause_probe_.get());
    monitor_->set_other_thread_sampler(other_sampler_.get());
    if (const ContextOptions context = ContextOptionsFor(
            config_.context, config_.input, static_cast<uint32_t>(config_.perceived_after.count()));
        context.context || context.input) {
      context_shared_ = std::make_unique<ContextShared>(context);
      context_probe_.emplace(&internal::g_main_loop.context, context_shared_.get());
      monitor_->set_context_probe(&*context_probe_);
    }
    if (runtime_frames_ != nullptr) {
      runtime_frames_->Watch(main_);
      runtime_frames_->set_note(NoteToLog());
      monitor_->set_runtime_frames(runtime_frames_.get());
      if (open_file_ != nullptr) open_file_->set_runtime_names(runtime_frames_->names());
    }
    monitor_->set_jit_names(jit_names_.get());  // null: none
    if (jit_names_ != nullptr) jit_names_->set_note(NoteToLog());
    std::optional<report::Lag> lag_identity;
    if (config_.time_every_pass) {
      // On the watched thread: the pass under way, if any, is timed from now.
      EnablePassTimer();
      report::Lag identity;
      identity.pid = options_.pid;
      identity.process_name = ThisProcessName();
      identity.host = host_;
      identity.labels = labels_;
      lag_identity = identity;
      identity.tid = main_.tid;
      identity.thread_role = "main";
      if (char name[16] = {}; env_->ThreadName(main_, name)) identity.thread_name = name;
      lag_.emplace(std::move(identity),
                   static_cast<uint64_t>(config_.lag_interval.count()) * kNsPerMs);
      lag_->set_queued_passes(&internal::g_main_loop.context);
      lag_->Begin(ReadPassTimer(), MonotonicNs(), UnixMs());
    }
    return InitThreads(std::move(lag_identity));
  }

  // The other watched threads' monitors (thread_monitors.h), all allocated now.
  Status InitThreads(std::optional<report::Lag> lag_identity) {
    ThreadRegistry& registry = ThreadRegistry::Ensure(config_.max_watched_threads);
    registry.set_limit(config_.max_watched_threads);
    // Slots released while no agent ran: nothing follows them.
    for (size_t i = 0; i < registry.capacity(); ++i) {
      if (registry.status(i) == SlotStatus::kReleased) registry.Free(i);
    }
    threads_not_watched_at_start_ = registry.not_watched();
    not_watched_in_lag_ = threads_not_watched_at_start_;
    ThreadMonitors::Shared shared;
    shared.config = &config_;
    shared.sampler = sampler_.get();
    shared.make_sampler = make_thread_sampler_;
    shared.make_cause_probe = make_cause_probe_;
    shared.other_sampler = other_sampler_.get();
    shared.runtime = runtime_frames_.get();
    shared.jit_names = jit_names_.get();
    shared.env = env_.get();
    shared.normalizer = normalizer_.get();
    shared.ring = &ring_;
    shared.cfi = cfi_.get();
    shared.context = context_shared_.get();
    shared.stats = &thread_stats_;
    shared.lag_identity = std::move(lag_identity);
    if (!config_.open_hang_path.empty()) shared.open_hang_path = config_.open_hang_path;
    threads_ = std::make_unique<ThreadMonitors>(&registry, std::move(shared), this);
    return Status::Ok();
  }

  // A hang the last run of this process left open in `path`, kept for the watchdog to report.
  void ReadFatalHang(const std::string& path) {
    HangRecord fatal;
    std::string error;
    switch (ReadOpenHangFile(path, &fatal, &error)) {
      case OpenHangReadStatus::kFound:
        fatals_.push_back(std::move(fatal));
        break;
      case OpenHangReadStatus::kInvalid:
        if (logger_) logger_->warn("hangwatch: ignoring the open-hang file: {}", error);
        break;
      case OpenHangReadStatus::kNoOpenHang:
        break;
    }
  }

  void StartThread() {
    // Armed before the thread runs: an _exit() right after Start() finds a watchdog to ask
    // (which sees the request before its first tick).
    ExitFlushArm(pthread_self());
    // The watchdog must not take the application's process-directed signals: block every
    // asynchronous signal in it (the new thread inherits the mask).
    sigset_t all, old;
    sigfillset(&all);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) {
      sigdelset(&all, s);
    }
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([this] { Run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  // Joins the watchdog and uninstalls the sampler (restoring the signal's disposition).
  void StopThread() {
    if (thread_.joinable() && thread_.get_id() == std::this_thread::get_id()) {
      // The watchdog itself, in exit(): when the watched thread ended with pthread_exit() and
      // the watchdog, having noticed, was the last thread to return, glibc calls exit(0) on
      // it, and the exit handlers and static destructors run here. Its loop is over.
      thread_.detach();
    }
    if (thread_.joinable()) {
      stop_.store(true, std::memory_order_release);
      WakeWatchdog();
      thread_.join();
      if (lag_) DisablePassTimer();
      final_state_.store(internal::RunLoopState(internal::g_run_loop_state),
                         std::memory_order_relaxed);
    }
    // Everything but the ring and the counters (kept for RecentHangs() and GetStats() until
    // the next Start()) goes now: no descriptor or mapping outlives Stop(). Under busy_mu_, so
    // that a fork() meanwhile sees each of them whole or gone.
    std::lock_guard<std::mutex> busy(busy_mu_);
    threads_.reset();
    monitor_.reset();
    context_probe_.reset();
    context_shared_.reset();
    cause_probe_.reset();
    other_sampler_.reset();
    sampler_.reset();
    signal_sampler_.reset();
    cfi_.reset();
    open_file_.reset();
    sinks_.FlushAndClear();
    env_.reset();
    normalizer_.reset();
    signal_ = 0;
  }

  std::thread::id watchdog_id() const { return thread_.get_id(); }
  int signal() const { return signal_.load(); }

  std::vector<HangRecord> Recent() {
    // Copy out under the ring's lock, symbolize outside it (the watchdog may be pushing).
    std::vector<std::unique_ptr<HangData>> copies;
    ring_.ForEachNewestFirst([&](const HangData& h) {
      copies.push_back(std::make_unique<HangData>(h.limits()));
      copies.back()->CopyFrom(h);
    });
    std::vector<HangRecord> out;
    const MaterializeOptions mo = LocalOptions();
    out.reserve(copies.size() + 1);
    for (const auto& h : copies) {
      out.push_back(Materialize(*h, mo));
    }
    std::lock_guard<std::mutex> lock(mu_);
    // The oldest: they happened before us.
    out.insert(out.end(), fatals_reported_.begin(), fatals_reported_.end());
    return out;
  }

  Stats GetStats() const {
    Stats s = stats_.Snapshot();
    // Passes straight from the pass counter, so the count is exact even between the
    // watchdog's looks; frozen when the watchdog stops.
    const uint64_t state = final_state_.load(std::memory_order_relaxed) != kNoState
                               ? final_state_.load(std::memory_order_relaxed)
                               : internal::RunLoopState(internal::g_run_loop_state);
    s.passes_seen = (state + 1) / 2 - (initial_state_ + 1) / 2;
    // The other threads' hangs and captures count with the main thread's.
    const Stats t = thread_stats_.Snapshot();
    s.hangs += t.hangs;
    s.hangs_suppressed += t.hangs_suppressed;
    s.samples += t.samples;
    s.failed_captures += t.failed_captures;
    s.early_samples_dropped += t.early_samples_dropped;
    if (ThreadRegistry* registry = ThreadRegistry::Get(); registry != nullptr) {
      s.threads_watched = registry->watched();
      s.threads_not_watched = registry->not_watched() - threads_not_watched_at_start_;
    }
    // Every pass since Start() (lag_->SinceBegin reads only what Init() wrote).
    if (lag_) s.lag = lag_->SinceBegin(ReadPassTimer()).Figures();
    return s;
  }
  uint64_t TrackedState() const { return stats_.tracked_state.load(std::memory_order_relaxed); }
  size_t FollowedThreads() const { return followed_threads_.load(std::memory_order_relaxed); }
  std::shared_ptr<spdlog::logger> logger() const { return logger_; }

  // ---- MonitorListener (watchdog thread) ----
  void OnHangOpened(const HangData& hang) override {
    if (open_file_) {
      open_file_->Open(hang);
    }
  }
  void OnHangSample(const HangData& hang) override {
    if (open_file_) {
      open_file_->AddLastSample(hang);
    }
  }
  void OnHangDiscarded() override {
    if (open_file_) {
      open_file_->Clear();
    }
  }
  void OnSamplingSignalTaken() override {
    if (logger_) {
      logger_->warn(
          "hangwatch: the application replaced the handler of signal {} (hangwatch's sampling "
          "signal); running threads are no longer sampled, threads asleep in the kernel still are",
          signal_.load());
    }
  }
  void OnHangClosed(const HangData& hang) override {
    if (open_file_) {
      open_file_->Clear();
    }
    ReportThreadHang(hang);
  }

  // ---- ThreadMonitors::Reporter (watchdog thread, busy_mu_ held) ----
  void ReportThreadLag(const report::Lag& record) override { sinks_.Lag(record); }
  void ThreadNote(const std::string& note) override {
    if (logger_) logger_->warn("hangwatch: {}", note);
  }
  // A closed hang of any watched thread, materialized and handed to the sinks.
  void ReportThreadHang(const HangData& hang) override {
    sinks_.Materialized(hang, LocalOptions());
  }

 private:
  std::function<void(const std::string&)> NoteToLog() const {  // a runtime's notes, as warnings
    return [logger = logger_](const std::string& note) {
      if (logger) logger->warn("hangwatch: {}", note);
    };
  }

  MaterializeOptions LocalOptions() const {
    MaterializeOptions mo;
    mo.modules = symbols::CurrentModuleMap();
    mo.addresses_are_local = true;
    mo.process = process_;
    mo.host = host_;
    mo.labels = labels_;
    mo.runtime_names = runtime_frames_ != nullptr ? runtime_frames_->names() : nullptr;
    mo.jit_lines = jit_names_.get();
    return mo;
  }

  // The lag record of the interval ending now, if it had passes, to every sink (busy_mu_
  // held). `with_running_pass`: the process is exiting, and the watched thread's pass under
  // way, if any (exit() called on another thread), ends with it: counted as it stands.
  void ReportLag(bool with_running_pass = false) {
    lag_->DrainQueuedPasses();  // before the counters: each pass drained is in them
    PassHistogram passes = ReadPassTimer();
    const uint64_t state = internal::RunLoopState(internal::g_run_loop_state);
    if (uint64_t ns = 0;
        with_running_pass && (state & 1) != 0 && env_->RunningPassNs(RunLoopWord{}, state, &ns)) {
      passes.Add(ns);
    }
    std::optional<report::Lag> record = lag_->Close(passes, MonotonicNs(), UnixMs());
    if (ThreadRegistry* registry = ThreadRegistry::Get(); record && registry != nullptr) {
      // Threads left out since the last record: never a silent gap.
      const uint64_t not_watched = registry->not_watched();
      record->threads_not_watched = not_watched - not_watched_in_lag_;
      not_watched_in_lag_ = not_watched;
    }
    if (record) {
      sinks_.Lag(*record);
    }
  }

  void Run() {
    NameWatchdogThread();
    for (HangRecord& fatal : fatals_) {
      // A hang of this machine's last run: it had the labels it has now, or none.
      if (fatal.host.empty()) fatal.host = host_;
      if (fatal.labels.empty()) fatal.labels = labels_;
      stats_.fatal_hangs.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> busy(busy_mu_);
        sinks_.Hang(fatal);
      }
      std::lock_guard<std::mutex> lock(mu_);
      fatals_reported_.push_back(std::move(fatal));
    }
    fatals_.clear();
    uint64_t next_liveness_ns = 0;
    bool watched_thread_exited = false;
    // Stop() and an _exit() that asks for the last records (exit_flush.h) both wake the sleep
    // (watchdog_sleep.h) and end the loop.
    for (;;) {
      const uint32_t wakeups = WatchdogWakeups();
      if (stop_.load(std::memory_order_acquire) || ExitFlushRequested()) break;
      // The watched thread can end without Stop(): a main thread that calls pthread_exit()
      // leaves the process to its other threads, and when the watchdog is the last of them
      // (blocking every signal) the process would never end nor take a SIGTERM. Looked at
      // once a second; a watchdog whose thread is gone ends as at Stop().
      if (MonotonicNs() >= next_liveness_ns) {
        if (env_->ThreadExited(main_)) {
          watched_thread_exited = true;
          break;
        }
        next_liveness_ns = MonotonicNs() + kLivenessCheckNs;
      }
      uint64_t next;
      {
        std::lock_guard<std::mutex> busy(busy_mu_);
        next = monitor_->Tick();
        next = std::min(next, threads_->Tick(MonotonicNs()));
        followed_threads_.store(threads_->followed(), std::memory_order_relaxed);
        if (lag_) lag_->DrainQueuedPasses();
        if (lag_ && MonotonicNs() >= lag_->due_ns()) ReportLag();
        if (lag_) next = std::min(next, lag_->due_ns());
      }
      next = std::min(next, next_liveness_ns);
      if (stop_.load(std::memory_order_acquire) || ExitFlushRequested()) break;
      WatchdogSleepUntil(next, wakeups);
    }
    std::lock_guard<std::mutex> busy(busy_mu_);
    if (watched_thread_exited && logger_) {
      logger_->warn("hangwatch: the watched thread {} has exited; the watchdog stops", main_.tid);
    }
    monitor_->Finish(watched_thread_exited);
    threads_->Finish();
    if (lag_) ReportLag(ExitNoted());  // the last interval, however short
    if (ExitFlushRequested()) ExitFlushDone();
    ExitFlushDisarm();
  }

  const Config config_;
  const MonitorOptions options_;
  unwind::ThreadInfo main_;
  std::string process_;
  std::shared_ptr<spdlog::logger> logger_;  // the spdlog sink's, and where sink errors go
  std::string host_;
  std::map<std::string, std::string> labels_;  // HANGWATCH_LABELS, then Config::labels
  std::optional<LagReporter> lag_;             // with Config::time_every_pass
  std::unique_ptr<OpenHangFile> open_file_;
  std::vector<HangRecord> fatals_;           // read at Start, reported by the watchdog
  std::vector<HangRecord> fatals_reported_;  // kept for RecentHangs()
  std::unique_ptr<WatchdogEnv> env_;
  std::unique_ptr<LeafNormalizer> normalizer_;
  std::unique_ptr<unwind::ThreadSampler> signal_sampler_;  // behind sampler_ (ProcFirstSampler)
  std::unique_ptr<unwind::ThreadSampler> sampler_;
  std::unique_ptr<WaitCauseProbe> cause_probe_;  // why blocked samples wait (null: no causes)
  std::unique_ptr<OwnerSampler> other_sampler_;  // lock owners' (over signal_sampler_)
  // An interpreter's frames (Python, Ruby, JS: platform_sampler.cc), fatal hangs' too; or null.
  std::unique_ptr<RuntimeFrames> runtime_frames_;
  std::unique_ptr<JitCodeNames> jit_names_;  // a JVM's, asked for when a hang opens
  // What hangs' passes were serving, whether input waited (agent/context/); null when off.
  std::unique_ptr<ContextShared> context_shared_;
  std::optional<ContextProbe> context_probe_;  // the main thread's
  std::unique_ptr<symbols::CfiUnwinder> cfi_;
  std::atomic<int> signal_{0};  // read by SamplingSignal() from any thread
  HangRing ring_;
  MonitorStats stats_;
  static constexpr uint64_t kNoState = ~uint64_t{0};
  uint64_t initial_state_ = 0;                   // g_run_loop_state at Init()
  std::atomic<uint64_t> final_state_{kNoState};  // g_run_loop_state when the watchdog stopped
  std::unique_ptr<StallMonitor> monitor_;
  // The other watched threads (thread_monitors.h) and what they are made with.
  std::function<std::unique_ptr<unwind::ThreadSampler>()> make_thread_sampler_;
  std::function<std::unique_ptr<WaitCauseProbe>()> make_cause_probe_;
  MonitorStats thread_stats_;
  uint64_t threads_not_watched_at_start_ = 0;
  uint64_t not_watched_in_lag_ = 0;          // as of the last lag record
  std::atomic<size_t> followed_threads_{0};  // for tests (FollowedThreads())
  std::unique_ptr<ThreadMonitors> threads_;

  std::mutex mu_;  // fatals_reported_
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex busy_mu_;  // held by the watchdog while it works (LockForFork)
  // The sinks and how records reach them (sink_dispatch.h), under busy_mu_.
  SinkDispatch sinks_{&busy_mu_, &stats_.hangs_unreported};
};

// Start/Stop are serialized by g_lifecycle; g_agent (the running or last agent) by g_mu, held
// only to copy the pointer.
std::mutex g_lifecycle;
std::mutex g_mu;
std::shared_ptr<Agent> g_agent;
bool g_running = false;
std::atomic<std::thread::id> g_watchdog_id{};

std::shared_ptr<Agent> CurrentAgent() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_agent;
}

bool OnWatchdogThread() { return g_watchdog_id.load() == std::this_thread::get_id(); }

// ---- fork ----
// The agent whose watchdog PrepareFork() paused, between the prepare and the after-fork
// handlers of one fork().
std::shared_ptr<Agent> g_fork_agent;
// Where the child puts the references to its parent's agent: constructed over, never
// destroyed, so the agent stays alive (and untouched) until the child exits.
alignas(std::shared_ptr<Agent>) unsigned char g_abandoned[2][sizeof(std::shared_ptr<Agent>)];

void PrepareFork() {
  if (OnWatchdogThread()) {
    return;  // a callback forks: the watchdog is in a callback, outside its busy section
  }
  std::shared_ptr<Agent> agent = CurrentAgent();
  if (agent != nullptr) {
    agent->LockForFork();
    g_fork_agent = std::move(agent);
  }
}

void ParentAfterFork() {
  if (g_fork_agent != nullptr) {
    g_fork_agent->UnlockAfterFork();
    g_fork_agent.reset();
  }
}

// The child has one thread, the one that called fork(). The parent's agent is abandoned (see
// Agent::AbandonAfterFork) and our locks are made new, since any of them may have been held by
// a thread that does not exist here. The child starts unwatched: Start() works again, Stop()
// is a no-op.
void ChildAfterFork() {
  new (&g_lifecycle) std::mutex;
  new (&g_mu) std::mutex;
  new (&Callbacks().mu) std::mutex;
  DisablePassTimer();  // an atomic store; a Start() in the child enables it again
  if (ThreadRegistry* registry = ThreadRegistry::Get(); registry != nullptr) {
    registry->ForgetOtherThreadsAfterFork();  // their threads are not in the child
  }
  ExitFlushDisarm();  // no watchdog polls here
  if (g_agent != nullptr) {
    g_agent->AbandonAfterFork();
  }
  new (g_abandoned[0]) std::shared_ptr<Agent>(std::move(g_agent));
  new (g_abandoned[1]) std::shared_ptr<Agent>(std::move(g_fork_agent));
  g_running = false;
  g_watchdog_id.store(std::thread::id{});
}

void InstallForkHandlers() {
  static const bool installed = pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork) == 0;
  (void)installed;
}

}  // namespace

Status StartWithHooks(const Config& config, StartHooks hooks) {
  if (OnWatchdogThread()) {
    return Status::Error("hangwatch: Start() called from a hang callback");
  }
  InstallForkHandlers();
  std::lock_guard<std::mutex> lifecycle(g_lifecycle);
  if (g_running) {
    return Status::Error("hangwatch: already running; call Stop() first");
  }
  if (Status s = Validate(config); !s.ok()) {
    return s;
  }
  auto agent = std::make_shared<Agent>(config, OptionsFrom(config));
  if (Status s = agent->Init(std::move(hooks)); !s.ok()) {
    return s;
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_agent = agent;  // the previous (stopped) agent goes away here
  }
  agent->StartThread();
  g_watchdog_id.store(agent->watchdog_id());
  g_running = true;
  return Status::Ok();
}

bool WatchdogSeesCurrentPass() {
  auto agent = CurrentAgent();
  const uint64_t state = internal::RunLoopState(internal::g_run_loop_state);
  return agent != nullptr && (state & 1) != 0 && agent->TrackedState() == state;
}

size_t FollowedThreads() {
  auto agent = CurrentAgent();
  return agent != nullptr ? agent->FollowedThreads() : 0;
}

int SamplingSignal() {
  auto agent = CurrentAgent();
  return agent ? agent->signal() : 0;
}

}  // namespace agent

Status Start(const Config& config) { return agent::StartWithHooks(config, agent::StartHooks{}); }

void Stop() {
  if (agent::OnWatchdogThread()) {
    return;  // cannot join itself; documented
  }
  std::lock_guard<std::mutex> lifecycle(agent::g_lifecycle);
  if (!agent::g_running) {
    return;
  }
  auto a = agent::CurrentAgent();
  if (a) {
    a->StopThread();
  }
  agent::g_watchdog_id.store(std::thread::id{});
  agent::g_running = false;
}

bool IsRunning() {
  std::lock_guard<std::mutex> lifecycle(agent::g_lifecycle);
  return agent::g_running;
}

std::vector<HangRecord> RecentHangs() {
  auto a = agent::CurrentAgent();
  return a ? a->Recent() : std::vector<HangRecord>{};
}

void DumpRecentHangs(spdlog::logger* logger) {
  auto a = agent::CurrentAgent();
  std::shared_ptr<spdlog::logger> keep;
  if (logger == nullptr) {
    keep = a && a->logger() ? a->logger() : agent::DefaultLogger();
    logger = keep.get();
  }
  std::vector<HangRecord> hangs = RecentHangs();
  logger->info("hangwatch: {} recent hang{}", hangs.size(), hangs.size() == 1 ? "" : "s");
  for (auto it = hangs.rbegin(); it != hangs.rend(); ++it) {
    agent::LogHang(*logger, *it);
  }
}

Stats GetStats() {
  auto a = agent::CurrentAgent();
  return a ? a->GetStats() : Stats{};
}

PassHistogram PassDurations() { return agent::ReadPassTimer(); }

}  // namespace hangwatch
