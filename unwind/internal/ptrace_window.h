// The stop window of a ptrace snapshot, as seen by the tracer thread: which signals it blocks
// and waits for meanwhile, and the scheduling policy it runs under. Split from
// ptrace_capture.cc, which drives the window, because these guards are about the calling
// thread only and know nothing of the target. Internal to unwind/. Linux only.
#ifndef HANGWATCH_UNWIND_INTERNAL_PTRACE_WINDOW_H_
#define HANGWATCH_UNWIND_INTERNAL_PTRACE_WINDOW_H_

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <cstdint>

namespace hangwatch::unwind::internal {

// Blocks, in the calling thread, the termination signals for the window (the destructor
// restores the mask, which delivers whatever arrived meanwhile, after the target was released)
// and SIGCHLD, which the kernel sends the tracer whenever a tracee stops: waiting for it with
// sigtimedwait sleeps exactly until there is something to reap, instead of spinning on a CPU
// that the threads we wait for may need in order to reach their stop.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
    sigemptyset(&chld_);
    sigaddset(&chld_, SIGCHLD);
    sigset_t pending;
    chld_was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGCHLD) == 1;
  }
  ~BlockSignals() {
    // Drop the SIGCHLDs our tracees caused (unless one was already pending or the caller
    // blocks it anyway); a real child's exit is still reported by waitpid.
    if (!chld_was_pending_ && sigismember(&old_, SIGCHLD) != 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&chld_, nullptr, &zero) == SIGCHLD) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  bool TerminationPending() const {
    sigset_t pending;
    if (sigpending(&pending) != 0) return false;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      if (sigismember(&pending, s) == 1 && sigismember(&old_, s) != 1) return true;
    }
    return false;
  }
  // Sleeps until a SIGCHLD is pending (consuming it) or `ns` have passed.
  void WaitForChild(uint64_t ns) const {
    timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
    sigtimedwait(&chld_, nullptr, &ts);
  }

 private:
  sigset_t old_;
  sigset_t chld_;
  bool chld_was_pending_ = false;
};

// Runs the calling thread under SCHED_FIFO (lowest real-time priority) for the stop window, when
// allowed (root, CAP_SYS_NICE or RLIMIT_RTPRIO): on a busy machine the tracer otherwise waits
// for a CPU after every SIGCHLD and before detaching, and the target stays stopped meanwhile.
// The window is bounded (stop_timeout_ms) and the tracer sleeps while it waits, so this cannot
// starve anything. The destructor restores the previous policy.
class RealtimeWindow {
 public:
  explicit RealtimeWindow(bool enable) {
    if (!enable || pthread_getschedparam(pthread_self(), &policy_, &param_) != 0) return;
    if (policy_ != SCHED_OTHER && policy_ != SCHED_BATCH) return;  // already special: leave it
    sched_param fifo{};
    fifo.sched_priority = sched_get_priority_min(SCHED_FIFO);
    active_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
  }
  ~RealtimeWindow() { End(); }
  void End() {
    if (active_) pthread_setschedparam(pthread_self(), policy_, &param_);
    active_ = false;
  }

 private:
  int policy_ = SCHED_OTHER;
  sched_param param_{};
  bool active_ = false;
};

}  // namespace hangwatch::unwind::internal

#endif  // HANGWATCH_UNWIND_INTERNAL_PTRACE_WINDOW_H_
