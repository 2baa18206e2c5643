#include "agent/core/thread_monitors.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "agent/core/clock_now.h"
#include "agent/core/config_options.h"
#include "agent/core/pass_timer.h"

namespace hangwatch::agent {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;
// A thread that exits without stopping its watch (a C++ thread destroys its ThreadWatch as it
// unwinds; only a thread ended by other means does not) holds its slot until this check: rare
// enough that the idle cost stays flat (one /proc read per watched thread per 10 s).
constexpr uint64_t kLivenessCheckNs = 10'000'000'000;

}  // namespace

std::string ThreadOpenHangPath(const std::string& path, size_t slot) {
  return path + ".t" + std::to_string(slot);
}

std::vector<std::string> ThreadOpenHangPaths(const std::string& path) {
  std::vector<std::string> out;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".t";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
      out.push_back(slash == std::string::npos ? name : dir + name);
    }
  }
  closedir(d);
  return out;
}

// A slot's monitor reports through this: its open-hang file, then the agent.
class ThreadMonitors::SlotListener final : public MonitorListener {
 public:
  SlotListener(ThreadMonitors* owner, Slot* slot) : owner_(owner), slot_(slot) {}
  void OnHangOpened(const HangData& hang) override;
  void OnHangSample(const HangData& hang) override;
  void OnHangClosed(const HangData& hang) override;
  void OnHangDiscarded() override;

 private:
  ThreadMonitors* owner_;
  Slot* slot_;
};

struct ThreadMonitors::Slot {
  // Made when the watchdog first follows a thread in this slot, kept until Stop(): a slot's
  // next threads reuse them (about 300 KiB with the default limits, most of it touched: made
  // for every slot at Start(), 64 slots would cost 20 MB that a program watching no other
  // thread never uses).
  std::unique_ptr<MonitorStorage> storage;
  std::unique_ptr<unwind::ThreadSampler> sampler;  // null: the shared one
  std::unique_ptr<WaitCauseProbe> cause_probe;
  std::optional<ContextProbe> context_probe;  // over the slot's words, while followed
  std::unique_ptr<OpenHangFile> open_file;
  std::unique_ptr<SlotListener> listener;
  std::optional<StallMonitor> monitor;  // while a thread holds the slot
  std::optional<LagReporter> lag;
  uint64_t generation = 0;  // the registration followed
  size_t index = 0;
};

void ThreadMonitors::SlotListener::OnHangOpened(const HangData& hang) {
  if (slot_->open_file) slot_->open_file->Open(hang);
}
void ThreadMonitors::SlotListener::OnHangSample(const HangData& hang) {
  if (slot_->open_file) slot_->open_file->AddLastSample(hang);
}
void ThreadMonitors::SlotListener::OnHangClosed(const HangData& hang) {
  if (slot_->open_file) slot_->open_file->Clear();
  owner_->reporter_->ReportThreadHang(hang);
}
void ThreadMonitors::SlotListener::OnHangDiscarded() {
  if (slot_->open_file) slot_->open_file->Clear();
}

ThreadMonitors::ThreadMonitors(ThreadRegistry* registry, Shared shared, Reporter* reporter)
    : registry_(registry), shared_(std::move(shared)), reporter_(reporter) {
  const size_t n = std::min(registry_->capacity(), shared_.config->max_watched_threads);
  slots_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto w = std::make_unique<Slot>();
    w->index = i;
    w->listener = std::make_unique<SlotListener>(this, w.get());
    slots_.push_back(std::move(w));
  }
}

ThreadMonitors::~ThreadMonitors() = default;

size_t ThreadMonitors::followed() const {
  size_t n = 0;
  for (const auto& w : slots_) n += w->monitor.has_value() ? 1 : 0;
  return n;
}

void ThreadMonitors::Adopt(size_t i, Slot& w) {
  const WatchedThreadSlot& s = registry_->slot(i);
  const MonitorOptions options =
      OptionsForThread(*shared_.config, s.threshold_ns, s.sample_interval_ns);
  if (w.storage == nullptr) {
    w.storage = std::make_unique<MonitorStorage>(options.limits, shared_.config->stack_copy_bytes);
    if (shared_.make_sampler) w.sampler = shared_.make_sampler();
    if (shared_.make_cause_probe) w.cause_probe = shared_.make_cause_probe();
  }
  unwind::ThreadSampler* sampler = w.sampler != nullptr ? w.sampler.get() : shared_.sampler;
  w.monitor.emplace(options, &s.loop.state, s.thread, sampler, shared_.env, shared_.normalizer,
                    shared_.ring, w.listener.get(), shared_.stats, w.storage.get());
  w.monitor->set_role(s.role);
  w.monitor->set_pass_timer(&s.loop.timer);
  w.monitor->set_cfi_unwinder(shared_.cfi);
  w.monitor->set_wait_cause_probe(w.cause_probe.get());
  w.monitor->set_other_thread_sampler(shared_.other_sampler);
  w.monitor->set_runtime_frames(shared_.runtime);
  w.monitor->set_jit_names(shared_.jit_names);
  if (shared_.context != nullptr) {
    w.context_probe.emplace(&s.loop.context, shared_.context);
    w.monitor->set_context_probe(&*w.context_probe);
  }
  w.generation = s.generation;
  if (!shared_.open_hang_path.empty()) {
    std::string error;
    w.open_file =
        OpenHangFile::Create(ThreadOpenHangPath(shared_.open_hang_path, i), options.limits, &error);
    if (w.open_file != nullptr && shared_.runtime != nullptr) {
      w.open_file->set_runtime_names(shared_.runtime->names());
    }
    if (w.open_file == nullptr) {
      reporter_->ThreadNote(
          "thread " + std::string(s.role) +
          ": no open-hang file, a hang that kills the process is not told: " + error);
    }
  }
  if (shared_.lag_identity) {
    // Timed from now: the clock's only writers are this thread (here and at Finish()) and
    // Stop(); the slot's thread only reads it (its timed-mode bit stays set).
    StartPassClock(&registry_->slot(i).loop.timer);
    report::Lag identity = *shared_.lag_identity;
    identity.tid = s.thread.tid;
    identity.thread_role = s.role;
    char name[16] = {};
    if (shared_.env->ThreadName(s.thread, name)) identity.thread_name = name;
    const uint64_t interval_ns =
        static_cast<uint64_t>(shared_.config->lag_interval.count()) * kNsPerMs;
    w.lag.emplace(std::move(identity), interval_ns);
    w.lag->set_queued_passes(&registry_->slot(i).loop.context);
    w.lag->Begin(ReadPassTimer(s.loop.timer), shared_.env->MonotonicNs(), UnixMs());
  }
}

void ThreadMonitors::ReportLag(Slot& w, bool last) {
  if (!w.lag) return;
  const WatchedThreadSlot& s = registry_->slot(w.index);
  w.lag->DrainQueuedPasses();  // before the counters: each pass drained is in them
  std::optional<report::Lag> record =
      w.lag->Close(ReadPassTimer(s.loop.timer), shared_.env->MonotonicNs(), UnixMs());
  if (record) reporter_->ReportThreadLag(*record);
  if (last) w.lag.reset();
}

void ThreadMonitors::LetGo(Slot& w, bool thread_exited) {
  if (!w.monitor) return;
  w.monitor->Finish(thread_exited);
  ReportLag(w, /*last=*/true);
  // Its thread's BeginWork() stops reading the clock (the slot's next thread starts it again).
  StopPassClock(&registry_->slot(w.index).loop.timer);
  w.monitor.reset();
  w.open_file.reset();  // removes the file: it holds nothing
}

uint64_t ThreadMonitors::Tick(uint64_t now_ns) {
  uint64_t next = UINT64_MAX;
  const bool check_liveness = now_ns >= next_liveness_ns_;
  if (check_liveness) next_liveness_ns_ = now_ns + kLivenessCheckNs;
  for (auto& wp : slots_) {
    Slot& w = *wp;
    const size_t i = w.index;
    switch (registry_->status(i)) {
      case SlotStatus::kActive: {
        const WatchedThreadSlot& s = registry_->slot(i);
        if (w.monitor && w.generation != s.generation) LetGo(w, /*thread_exited=*/false);
        if (!w.monitor) Adopt(i, w);
        if (check_liveness && shared_.env->ThreadExited(s.thread)) {
          // Gone without stopping its watch (its word went with it): the slot is free again.
          LetGo(w, /*thread_exited=*/true);
          registry_->Free(i);
          continue;
        }
        next = std::min(next, w.monitor->Tick());
        if (w.lag) w.lag->DrainQueuedPasses();
        if (w.lag && shared_.env->MonotonicNs() >= w.lag->due_ns()) ReportLag(w, false);
        if (w.lag) next = std::min(next, w.lag->due_ns());
        break;
      }
      case SlotStatus::kReleased:
        LetGo(w, /*thread_exited=*/false);
        registry_->Free(i);
        break;
      case SlotStatus::kOrphaned:
        // Its thread may still write its word: the slot waits until the thread is gone.
        LetGo(w, /*thread_exited=*/false);
        if (check_liveness && shared_.env->ThreadExited(registry_->slot(i).thread)) {
          registry_->Free(i);
        }
        break;
      case SlotStatus::kFree:
      case SlotStatus::kClaimed:
        break;
    }
  }
  return std::min(next, next_liveness_ns_);
}

void ThreadMonitors::Finish() {
  for (auto& w : slots_) {
    LetGo(*w, /*thread_exited=*/false);
    if (registry_->status(w->index) == SlotStatus::kReleased) registry_->Free(w->index);
  }
}

void ThreadMonitors::ReleaseAfterFork() {
  for (auto& w : slots_) {
    if (w->open_file) w->open_file->ReleaseAfterFork();
  }
}

}  // namespace hangwatch::agent
