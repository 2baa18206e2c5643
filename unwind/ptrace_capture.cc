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
  auto fail = [&](PtraceError e, int err) {
    snap.error = e;
    snap.error_errno = err;
    snap.capture_ns = NowNs() - call_start;
    return snap;
  };
  if (pid <= 0) return fail(PtraceError::kNoSuchProcess, ESRCH);
  if (pid == getpid()) return fail(PtraceError::kIsSelf, EINVAL);

  std::vector<pid_t> tids;
  if (!internal::ListTasks(pid, &tids)) {
    return errno == ENOENT ? fail(PtraceError::kNoSuchProcess, ENOENT)
                           : fail(PtraceError::kSystem, errno);
  }
  if (tids.empty()) {
    return ProcessGone(pid) ? fail(PtraceError::kNoSuchProcess, ESRCH)
                            : fail(PtraceError::kZombie, 0);
  }
  if (tids.size() > options.max_threads) {
    snap.omitted = tids.size() - options.max_threads;
    tids.resize(options.max_threads);
  }

  // ---- before the stop: per-thread facts, stack mappings, buffers, PTRACE_SEIZE ----
  snap.threads.reserve(std::min(options.max_threads, tids.size() + 64));
  char task_path[64];
  std::snprintf(task_path, sizeof(task_path), "/proc/%d/task", pid);
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) close(fd);
    }
  } task_dir{open(task_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  auto add_thread = [&](pid_t tid, bool during_stop) {
    PtraceThread t;
    t.tid = tid;
    t.created_during_stop = during_stop;
    internal::ReadThreadInfo(pid, task_dir.fd, &t);
    t.stack.resize(options.stack_bytes);
    snap.threads.push_back(std::move(t));
  };
  for (pid_t tid : tids) add_thread(tid, false);
  // A zombie process: the leader exited and no live thread is left (a thread whose stat could
  // not be read counts as gone).
  if (std::none_of(snap.threads.begin(), snap.threads.end(), [](const PtraceThread& t) {
        return t.state != 'Z' && t.state != 'X' && t.state != '?';
      })) {
    snap.threads.clear();
    return ProcessGone(pid) ? fail(PtraceError::kNoSuchProcess, ESRCH)
                            : fail(PtraceError::kZombie, 0);
  }
  std::vector<internal::Mapping> maps = internal::ReadReadableMappings(pid);

  internal::BlockSignals signals;
  Attachments attached(&snap);
  attached.Resize();

  // Seizes one thread. Returns false with snap.error set when the whole snapshot must stop.
  auto seize = [&](PtraceThread& t) -> bool {
    if (t.state == 'Z' || t.state == 'X') {
      t.status = PtraceThreadStatus::kZombie;
      return true;
    }
    if (ptrace(PTRACE_SEIZE, t.tid, nullptr, nullptr) == 0) {
      attached.set_seized(t);
      return true;
    }
    int err = errno;
    if (err == ESRCH) {
      t.status = PtraceThreadStatus::kVanished;
      return true;
    }
    if (err == EPERM) {
      pid_t tracer = ReadTracerPid(pid);
      if (tracer != 0 && tracer != getpid()) {
        snap.tracer_pid = tracer;
        snap.error = PtraceError::kAlreadyTraced;
      } else {
        snap.error = ProcessGone(pid) ? PtraceError::kExited : PtraceError::kPermission;
      }
      snap.error_errno = err;
      return false;
    }
    t.status = PtraceThreadStatus::kFailed;
    t.error_errno = err;
    return true;
  };
  // A fatal error (EPERM...) usually comes from the first thread. Threads seized before it
  // still go through the window below: the kernel detaches only stopped tracees, so they are
  // interrupted, waited for and detached like the others, just without being copied.
  bool abort = false;
  for (PtraceThread& t : snap.threads) {
    if (!seize(t)) {
      abort = true;
      break;
    }
  }

  // ---- the stop window ----
  internal::RealtimeWindow realtime(options.realtime_window);
  const uint64_t window_start = NowNs();
  const uint64_t deadline =
      window_start + static_cast<uint64_t>(options.stop_timeout_ms) * 1000000u;
  std::vector<size_t> pending;
  auto interrupt = [&](size_t i) {
    PtraceThread& t = snap.threads[i];
    if (!attached.seized(t)) return;
    if (ptrace(PTRACE_INTERRUPT, t.tid, nullptr, nullptr) == 0) {
      pending.push_back(i);
    } else {
      t.status = PtraceThreadStatus::kVanished;
    }
  };
  for (size_t i = 0; i < snap.threads.size(); ++i) interrupt(i);

  bool cancelled = false;
  uint64_t last_stop = window_start;
  auto copy_thread = [&](PtraceThread& t) {
    if (!internal::ReadRegisters(&t)) {
      t.status = errno == ESRCH ? PtraceThreadStatus::kVanished : PtraceThreadStatus::kFailed;
      t.error_errno = errno;
      t.stack.clear();
      return;
    }
    internal::CopyStack(t.tid, maps, &t);
    t.status = PtraceThreadStatus::kCaptured;
  };
  auto wait_pending = [&]() {
    while (!pending.empty()) {
      bool progress = false;
      for (size_t k = 0; k < pending.size();) {
        PtraceThread& t = snap.threads[pending[k]];
        int status = 0;
        pid_t r = waitpid(t.tid, &status, __WALL | WNOHANG);
        bool done = false;
        if (r == t.tid) {
          if (WIFSTOPPED(status)) {
            // PTRACE_EVENT_STOP: our interrupt or a group-stop (stays a group-stop after we
            // detach). Event 0: a signal-delivery-stop: keep the signal to re-inject it.
            if ((status >> 16) == 0) t.pending_signal = WSTOPSIG(status);
            attached.set_stopped(t);
            last_stop = NowNs();
            if (!options.stop_all && !abort) {
              // One thread at a time: copy it and let it go right away.
              copy_thread(t);
              attached.Detach(t);
            }
          } else {  // WIFEXITED / WIFSIGNALED
            t.status = PtraceThreadStatus::kVanished;
          }
          done = true;
        } else if (r < 0 && errno != EINTR) {
          t.status = PtraceThreadStatus::kVanished;  // ECHILD: gone and reaped elsewhere
          done = true;
        }
        if (done) {
          pending[k] = pending.back();
          pending.pop_back();
          progress = true;
        } else {
          ++k;
        }
      }
      if (pending.empty()) break;
      if (signals.TerminationPending()) {
        cancelled = true;
        break;
      }
      const uint64_t now = NowNs();
      if (now >= deadline) break;
      if (!progress) {
        // A thread that stopped may have been killed since (SIGKILL ends a ptrace-stop). Reap
        // it: an unreaped zombie thread would keep the leader's own exit from ever being
        // reported, and this wait from ending before the deadline.
        for (PtraceThread& t : snap.threads) {
          int status = 0;
          if (attached.stopped(t) && waitpid(t.tid, &status, __WALL | WNOHANG) == t.tid &&
              (WIFEXITED(status) || WIFSIGNALED(status))) {
            attached.clear_stopped(t);
            t.status = PtraceThreadStatus::kVanished;
            progress = true;
          }
        }
      }
      if (!progress) {
        // At most 1 ms per sleep: SIGCHLD is not sent when the caller ignores it
        // (SIG_IGN / SA_NOCLDSTOP), and termination signals are checked between sleeps.
        signals.WaitForChild(std::min<uint64_t>(deadline - now, 1000000u));
      }
    }
    for (size_t i : pending) snap.threads[i].status = PtraceThreadStatus::kNotStopped;
    pending.clear();
  };
  wait_pending();

  // Threads created before their creator stopped: seize and stop them too, until stable.
  for (int round = 0; round < options.relist_rounds && !cancelled && !abort; ++round) {
    std::vector<pid_t> now;
    if (!internal::ListTasks(pid, &now)) break;
    size_t before = snap.threads.size();
    for (pid_t tid : now) {
      bool known = std::any_of(snap.threads.begin(), snap.threads.end(),
                               [tid](const PtraceThread& t) { return t.tid == tid; });
      if (!known && snap.threads.size() < options.max_threads) add_thread(tid, true);
    }
    if (snap.threads.size() == before) break;
    attached.Resize();
    bool ok = true;
    for (size_t i = before; i < snap.threads.size() && ok; ++i) ok = seize(snap.threads[i]);
    if (!ok) {
      snap.error = PtraceError::kOk;  // a late thread we may not trace: skip it, keep the rest
      snap.error_errno = 0;
    }
    for (size_t i = before; i < snap.threads.size(); ++i) interrupt(i);
    wait_pending();
  }

  // Copy registers and stacks of every stopped thread.
  if (!cancelled && !abort) {
    for (PtraceThread& t : snap.threads) {
      if (attached.stopped(t)) copy_thread(t);
    }
  }
  const uint64_t stop_latency = last_stop - window_start;
  attached.DetachAll();
  snap.stopped_ns = NowNs() - window_start;
  realtime.End();
  for (const PtraceThread& t : snap.threads) {
    snap.max_thread_pause_ns = std::max(snap.max_thread_pause_ns, t.paused_ns);
  }
  snap.stop_latency_ns = stop_latency;

  // ---- after the stop ----
  for (PtraceThread& t : snap.threads) {
    if (t.status == PtraceThreadStatus::kNotStopped && !cancelled) {
      internal::ReadBlockedRegisters(pid, maps, &t);
    }
    if (t.status != PtraceThreadStatus::kCaptured && t.status != PtraceThreadStatus::kNotStopped) {
      t.stack.clear();
    }
    if (t.status == PtraceThreadStatus::kNotStopped && t.regs.sp == 0) t.stack.clear();
  }
  ReleaseLateStoppers();
  std::sort(snap.threads.begin(), snap.threads.end(),
            [](const PtraceThread& a, const PtraceThread& b) { return a.tid < b.tid; });

  if (abort) return fail(snap.error, snap.error_errno);
  if (cancelled) return fail(PtraceError::kCancelled, EINTR);
  if (snap.CountWithStatus(PtraceThreadStatus::kCaptured) == 0 &&
      snap.CountWithStatus(PtraceThreadStatus::kNotStopped) == 0) {
    // Nothing captured although it was alive when we started: it exited under us (it may be
    // a zombie by now, or already reaped).
    return fail(PtraceError::kExited, ESRCH);
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
