// CapturePtraceSnapshot: the order of a snapshot (list, seize, stop window, copy, detach) and
// the bookkeeping that makes every seized thread detached on every path. How one thread is read
// and copied is in internal/ptrace_thread.cc, the tracer's own signal and scheduling guards for
// the window in internal/ptrace_window.h, and the /proc formats in proc_files.cc.
#include "unwind/ptrace_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "unwind/internal/ptrace_thread.h"
#include "unwind/internal/ptrace_window.h"
#include "unwind/proc_files.h"

namespace hangwatch::unwind {
namespace {

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::mutex g_late_mu;
std::vector<pid_t> g_late;  // seized threads that had not stopped when we gave up

// Tracks seized threads so that every exit path detaches them.
class Attachments {
 public:
  explicit Attachments(PtraceSnapshot* snap) : snap_(snap) {}
  ~Attachments() { DetachAll(); }

  // Resumes one thread (if we stopped it) and records how long it was stopped.
  void Detach(PtraceThread& t) {
    const size_t i = static_cast<size_t>(&t - snap_->threads.data());
    if (!seized_[i]) return;
    if (stopped_[i]) {
      ptrace(PTRACE_DETACH, t.tid, nullptr,
             reinterpret_cast<void*>(static_cast<uintptr_t>(t.pending_signal)));
      t.paused_ns = NowNs() - stop_ns_[i];
      stopped_[i] = false;
    } else if (t.status == PtraceThreadStatus::kNotStopped) {
      std::lock_guard<std::mutex> lock(g_late_mu);
      g_late.push_back(t.tid);
    }
    seized_[i] = false;
  }

  void DetachAll() {
    for (PtraceThread& t : snap_->threads) Detach(t);
  }

  void Resize() {
    seized_.resize(snap_->threads.size(), false);
    stopped_.resize(snap_->threads.size(), false);
    stop_ns_.resize(snap_->threads.size(), 0);
  }
  bool seized(const PtraceThread& t) const { return seized_[&t - snap_->threads.data()]; }
  void set_seized(const PtraceThread& t) { seized_[&t - snap_->threads.data()] = true; }
  void set_stopped(const PtraceThread& t) {
    stopped_[&t - snap_->threads.data()] = true;
    stop_ns_[&t - snap_->threads.data()] = NowNs();
  }
  void clear_stopped(const PtraceThread& t) { stopped_[&t - snap_->threads.data()] = false; }
  bool stopped(const PtraceThread& t) const { return stopped_[&t - snap_->threads.data()]; }

 private:
  PtraceSnapshot* snap_;
  std::vector<bool> seized_;
  std::vector<bool> stopped_;
  std::vector<uint64_t> stop_ns_;  // when each thread's stop was seen
};

bool ProcessGone(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d", pid);
  return access(path, F_OK) != 0;
}

// The snapshot ends early with error `e` (errno `err`).
PtraceSnapshot Fail(const PtraceSnapshot& snap, PtraceError e, int err, uint64_t call_start) {
  PtraceSnapshot failed = snap;
  failed.error = e;
  failed.error_errno = err;
  failed.capture_ns = NowNs() - call_start;
  return failed;
}

// Adds threads to the snapshot before they are stopped: their /proc facts and their stack
// buffers, so that nothing is read or allocated for them inside the stop window.
class ThreadAdder {
 public:
  ThreadAdder(pid_t pid, const PtraceCaptureOptions& options, PtraceSnapshot* snap)
      : pid_(pid), options_(options), snap_(snap) {
    char task_path[64];
    std::snprintf(task_path, sizeof(task_path), "/proc/%d/task", pid);
    task_dir_ = open(task_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~ThreadAdder() {
    if (task_dir_ >= 0) close(task_dir_);
  }
  ThreadAdder(const ThreadAdder&) = delete;
  ThreadAdder& operator=(const ThreadAdder&) = delete;

  void Add(pid_t tid, bool during_stop) {
    PtraceThread t;
    t.tid = tid;
    t.created_during_stop = during_stop;
    internal::ReadThreadInfo(pid_, task_dir_, &t);
    // Not for a thread found inside the window: reading /proc there would lengthen the stop.
    if (!during_stop) internal::ReadSyscallBefore(pid_, task_dir_, &t);
    t.stack.resize(options_.stack_bytes);
    snap_->threads.push_back(std::move(t));
  }

 private:
  pid_t pid_;
  const PtraceCaptureOptions& options_;
  PtraceSnapshot* snap_;
  int task_dir_ = -1;
};

// A zombie process: the leader exited and no live thread is left (a thread whose stat could
// not be read counts as gone).
bool NoLiveThread(const PtraceSnapshot& snap) {
  return std::none_of(snap.threads.begin(), snap.threads.end(), [](const PtraceThread& t) {
    return t.state != 'Z' && t.state != 'X' && t.state != '?';
  });
}

// The stop window: seizing the threads, interrupting them, waiting for their stops (copying
// each one right away unless options.stop_all), the threads created meanwhile, detaching.
// Every seized thread is detached by the time this object is gone, whatever the path.
class StopWindow {
 public:
  StopWindow(pid_t pid, const PtraceCaptureOptions& options, PtraceSnapshot* snap,
             ThreadAdder* adder, const std::vector<internal::Mapping>& maps)
      : pid_(pid), options_(options), snap_(snap), adder_(adder), maps_(maps), attached_(snap) {
    attached_.Resize();
  }

  // Seizes every thread. A fatal error (EPERM...) usually comes from the first thread. Threads
  // seized before it still go through the window: the kernel detaches only stopped tracees, so
  // they are interrupted, waited for and detached like the others, just without being copied.
  void SeizeAll() {
    for (PtraceThread& t : snap_->threads) {
      if (!Seize(t)) {
        aborted_ = true;
        break;
      }
    }
  }

  // Stops every seized thread and waits for the stops, then for those of threads created
  // before their creator stopped.
  void Stop() {
    realtime_.emplace(options_.realtime_window);
    window_start_ = NowNs();
    deadline_ = window_start_ + static_cast<uint64_t>(options_.stop_timeout_ms) * 1000000u;
    last_stop_ = window_start_;
    for (size_t i = 0; i < snap_->threads.size(); ++i) Interrupt(i);
    WaitPending();
    StopLateThreads();
  }

  // Copies registers and stacks of every thread still stopped (all of them with stop_all),
  // detaches all and records the window's figures.
  void CopyAndDetach() {
    if (!cancelled_ && !aborted_) {
      for (PtraceThread& t : snap_->threads) {
        if (attached_.stopped(t)) CopyThread(t);
      }
    }
    const uint64_t stop_latency = last_stop_ - window_start_;
    attached_.DetachAll();
    snap_->stopped_ns = NowNs() - window_start_;
    realtime_->End();
    for (const PtraceThread& t : snap_->threads) {
      snap_->max_thread_pause_ns = std::max(snap_->max_thread_pause_ns, t.paused_ns);
    }
    snap_->stop_latency_ns = stop_latency;
  }

  bool aborted() const { return aborted_; }
  bool cancelled() const { return cancelled_; }

 private:
  // Seizes one thread. Returns false with snap_->error set when the whole snapshot must stop.
  bool Seize(PtraceThread& t) {
    if (t.state == 'Z' || t.state == 'X') {
      t.status = PtraceThreadStatus::kZombie;
      return true;
    }
    if (ptrace(PTRACE_SEIZE, t.tid, nullptr, nullptr) == 0) {
      attached_.set_seized(t);
      return true;
    }
    int err = errno;
    if (err == ESRCH) {
      t.status = PtraceThreadStatus::kVanished;
      return true;
    }
    if (err == EPERM) {
      pid_t tracer = ReadTracerPid(pid_);
      if (tracer != 0 && tracer != getpid()) {
        snap_->tracer_pid = tracer;
        snap_->error = PtraceError::kAlreadyTraced;
      } else {
        snap_->error = ProcessGone(pid_) ? PtraceError::kExited : PtraceError::kPermission;
      }
      snap_->error_errno = err;
      return false;
    }
    t.status = PtraceThreadStatus::kFailed;
    t.error_errno = err;
    return true;
  }

  void Interrupt(size_t i) {
    PtraceThread& t = snap_->threads[i];
    if (!attached_.seized(t)) return;
    if (ptrace(PTRACE_INTERRUPT, t.tid, nullptr, nullptr) == 0) {
      pending_.push_back(i);
    } else {
      t.status = PtraceThreadStatus::kVanished;
    }
  }

  void CopyThread(PtraceThread& t) {
    if (!internal::ReadRegisters(&t)) {
      t.status = errno == ESRCH ? PtraceThreadStatus::kVanished : PtraceThreadStatus::kFailed;
      t.error_errno = errno;
      t.stack.clear();
      return;
    }
    internal::CopyStack(t.tid, maps_, &t);
    t.status = PtraceThreadStatus::kCaptured;
    if (options_.while_stopped != nullptr) {
      options_.while_stopped(options_.while_stopped_context, t);
    }
  }

  // Waits until every interrupted thread has stopped or gone, the deadline passed or a
  // termination signal came (cancelled_). Threads still pending are kNotStopped.
  void WaitPending() {
    while (!pending_.empty()) {
      bool progress = ReapPending();
      if (pending_.empty()) break;
      if (signals_.TerminationPending()) {
        cancelled_ = true;
        break;
      }
      const uint64_t now = NowNs();
      if (now >= deadline_) break;
      if (!progress) progress = ReapKilledStoppedThreads();
      if (!progress) {
        // At most 1 ms per sleep: SIGCHLD is not sent when the caller ignores it
        // (SIG_IGN / SA_NOCLDSTOP), and termination signals are checked between sleeps.
        signals_.WaitForChild(std::min<uint64_t>(deadline_ - now, 1000000u));
      }
    }
    for (size_t i : pending_) snap_->threads[i].status = PtraceThreadStatus::kNotStopped;
    pending_.clear();
  }

  // One look at every pending thread without blocking. Returns whether any stopped or went.
  bool ReapPending() {
    bool progress = false;
    for (size_t k = 0; k < pending_.size();) {
      if (ReapOne(snap_->threads[pending_[k]])) {
        pending_[k] = pending_.back();
        pending_.pop_back();
        progress = true;
      } else {
        ++k;
      }
    }
    return progress;
  }

  // Whether the pending thread `t` stopped (and, one at a time, was copied and let go) or went.
  bool ReapOne(PtraceThread& t) {
    int status = 0;
    pid_t r = waitpid(t.tid, &status, __WALL | WNOHANG);
    if (r == t.tid) {
      if (WIFSTOPPED(status)) {
        // PTRACE_EVENT_STOP: our interrupt or a group-stop (stays a group-stop after we
        // detach). Event 0: a signal-delivery-stop: keep the signal to re-inject it.
        if ((status >> 16) == 0) t.pending_signal = WSTOPSIG(status);
        attached_.set_stopped(t);
        last_stop_ = NowNs();
        if (!options_.stop_all && !aborted_) {
          // One thread at a time: copy it and let it go right away.
          CopyThread(t);
          attached_.Detach(t);
        }
      } else {  // WIFEXITED / WIFSIGNALED
        t.status = PtraceThreadStatus::kVanished;
      }
      return true;
    }
    if (r < 0 && errno != EINTR) {
      t.status = PtraceThreadStatus::kVanished;  // ECHILD: gone and reaped elsewhere
      return true;
    }
    return false;
  }

  // A thread that stopped may have been killed since (SIGKILL ends a ptrace-stop). Reaps it:
  // an unreaped zombie thread would keep the leader's own exit from ever being reported, and
  // the wait from ending before the deadline. Returns whether any was reaped.
  bool ReapKilledStoppedThreads() {
    bool progress = false;
    for (PtraceThread& t : snap_->threads) {
      int status = 0;
      if (attached_.stopped(t) && waitpid(t.tid, &status, __WALL | WNOHANG) == t.tid &&
          (WIFEXITED(status) || WIFSIGNALED(status))) {
        attached_.clear_stopped(t);
        t.status = PtraceThreadStatus::kVanished;
        progress = true;
      }
    }
    return progress;
  }

  // Threads created before their creator stopped: seize and stop them too, until stable.
  void StopLateThreads() {
    for (int round = 0; round < options_.relist_rounds && !cancelled_ && !aborted_; ++round) {
      std::vector<pid_t> now;
      if (!internal::ListTasks(pid_, &now)) break;
      size_t before = snap_->threads.size();
      for (pid_t tid : now) {
        bool known = std::any_of(snap_->threads.begin(), snap_->threads.end(),
                                 [tid](const PtraceThread& t) { return t.tid == tid; });
        if (!known && snap_->threads.size() < options_.max_threads) adder_->Add(tid, true);
      }
      if (snap_->threads.size() == before) break;
      attached_.Resize();
      bool ok = true;
      for (size_t i = before; i < snap_->threads.size() && ok; ++i) ok = Seize(snap_->threads[i]);
      if (!ok) {
        snap_->error = PtraceError::kOk;  // a late thread we may not trace: skip it, keep the rest
        snap_->error_errno = 0;
      }
      for (size_t i = before; i < snap_->threads.size(); ++i) Interrupt(i);
      WaitPending();
    }
  }

  pid_t pid_;
  const PtraceCaptureOptions& options_;
  PtraceSnapshot* snap_;
  ThreadAdder* adder_;
  const std::vector<internal::Mapping>& maps_;
  internal::BlockSignals signals_;
  Attachments attached_;
  std::optional<internal::RealtimeWindow> realtime_;
  std::vector<size_t> pending_;  // interrupted threads (indexes) whose stop is awaited
  bool aborted_ = false;         // a fatal error while seizing: nothing is copied
  bool cancelled_ = false;       // a termination signal came during the window
  uint64_t window_start_ = 0;
  uint64_t deadline_ = 0;
  uint64_t last_stop_ = 0;  // when the last stop was seen
};

// After the stop: threads that did not stop are read through /proc (a thread blocked in the
// kernel); stacks that were not captured are dropped.
void ReadThreadsThatDidNotStop(pid_t pid, const std::vector<internal::Mapping>& maps,
                               bool cancelled, PtraceSnapshot* snap) {
  for (PtraceThread& t : snap->threads) {
    if (t.status == PtraceThreadStatus::kNotStopped && !cancelled) {
      internal::ReadBlockedRegisters(pid, maps, &t);
    }
    if (t.status != PtraceThreadStatus::kCaptured && t.status != PtraceThreadStatus::kNotStopped) {
      t.stack.clear();
    }
    if (t.status == PtraceThreadStatus::kNotStopped && t.regs.sp == 0) t.stack.clear();
  }
}

}  // namespace

const char* PtraceThreadStatusName(PtraceThreadStatus status) {
  switch (status) {
    case PtraceThreadStatus::kCaptured:
      return "captured";
    case PtraceThreadStatus::kVanished:
      return "vanished";
    case PtraceThreadStatus::kZombie:
      return "zombie";
    case PtraceThreadStatus::kNotStopped:
      return "did not stop";
    case PtraceThreadStatus::kFailed:
      return "failed";
  }
  return "?";
}

size_t PtraceSnapshot::CountWithStatus(PtraceThreadStatus s) const {
  return static_cast<size_t>(std::count_if(threads.begin(), threads.end(),
                                           [s](const PtraceThread& t) { return t.status == s; }));
}

PtraceSnapshot CapturePtraceSnapshot(pid_t pid, const PtraceCaptureOptions& options) {
  const uint64_t call_start = NowNs();
  PtraceSnapshot snap;
  snap.pid = pid;
  if (pid <= 0) return Fail(snap, PtraceError::kNoSuchProcess, ESRCH, call_start);
  if (pid == getpid()) return Fail(snap, PtraceError::kIsSelf, EINVAL, call_start);

  std::vector<pid_t> tids;
  if (!internal::ListTasks(pid, &tids)) {
    return errno == ENOENT ? Fail(snap, PtraceError::kNoSuchProcess, ENOENT, call_start)
                           : Fail(snap, PtraceError::kSystem, errno, call_start);
  }
  auto gone_or_zombie = [&] {
    return ProcessGone(pid) ? Fail(snap, PtraceError::kNoSuchProcess, ESRCH, call_start)
                            : Fail(snap, PtraceError::kZombie, 0, call_start);
  };
  if (tids.empty()) return gone_or_zombie();
  if (tids.size() > options.max_threads) {
    snap.omitted = tids.size() - options.max_threads;
    tids.resize(options.max_threads);
  }

  // ---- before the stop: per-thread facts, stack mappings, buffers, PTRACE_SEIZE ----
  snap.threads.reserve(std::min(options.max_threads, tids.size() + 64));
  ThreadAdder adder(pid, options, &snap);
  for (pid_t tid : tids) adder.Add(tid, false);
  if (NoLiveThread(snap)) {
    snap.threads.clear();
    return gone_or_zombie();
  }
  std::vector<internal::Mapping> maps = internal::ReadReadableMappings(pid);

  // ---- the stop window ----
  StopWindow window(pid, options, &snap, &adder, maps);
  window.SeizeAll();
  window.Stop();
  window.CopyAndDetach();
  const bool aborted = window.aborted();
  const bool cancelled = window.cancelled();

  // ---- after the stop ----
  ReadThreadsThatDidNotStop(pid, maps, cancelled, &snap);
  ReleaseLateStoppers();
  std::sort(snap.threads.begin(), snap.threads.end(),
            [](const PtraceThread& a, const PtraceThread& b) { return a.tid < b.tid; });

  if (aborted) return Fail(snap, snap.error, snap.error_errno, call_start);
  if (cancelled) return Fail(snap, PtraceError::kCancelled, EINTR, call_start);
  if (snap.CountWithStatus(PtraceThreadStatus::kCaptured) == 0 &&
      snap.CountWithStatus(PtraceThreadStatus::kNotStopped) == 0) {
    // Nothing captured although it was alive when we started: it exited under us (it may be
    // a zombie by now, or already reaped).
    return Fail(snap, PtraceError::kExited, ESRCH, call_start);
  }
  snap.capture_ns = NowNs() - call_start;
  return snap;
}

size_t ReleaseLateStoppers() {
  std::lock_guard<std::mutex> lock(g_late_mu);
  for (size_t k = 0; k < g_late.size();) {
    int status = 0;
    pid_t tid = g_late[k];
    pid_t r = waitpid(tid, &status, __WALL | WNOHANG);
    bool release = false;
    if (r == tid && WIFSTOPPED(status)) {
      int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));
      release = true;
    } else if (r == tid || (r < 0 && errno == ECHILD)) {
      release = true;  // exited
    }
    if (release) {
      g_late[k] = g_late.back();
      g_late.pop_back();
    } else {
      ++k;
    }
  }
  return g_late.size();
}

}  // namespace hangwatch::unwind
