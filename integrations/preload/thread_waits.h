// The waits of threads other than the main one, when HANGWATCH_THREADS is not `main`
// (thread_selection.h): when such a thread is taken for a loop, the agent library is asked to
// watch it (agent_entry.h: watch_thread), and from then on its waits mark its passes as the main
// thread's do. Internal to the loader, libhangwatch_preload.so (libc only, like shim_state.h):
// no allocation, no lock, no system call of its own on a wait, errno untouched.
//
// When a thread is a loop, and why (the rule docs/run.md states):
//   A pass begins when a wait returns and ends at the thread's next wait. A thread that waits in
//   the poll family as a helper would turn the time until its next wait into a pass: a resolver
//   polls its socket for an answer and then sleeps on its pool's condition variable, a thread
//   polls a pipe once and then blocks in read(); each would be a hang of that length. So a
//   thread is not watched from its first wait but once its waits show a loop:
//     - it came back to wait at one call site kReturnsToArm times, with every wait from another
//       site in between made deeper in the stack (its handlers'): a wait from another site no
//       deeper than the one followed starts the count again from that site;
//     - and at least once it idled there: that wait had a time-out of 10 s or more
//       (kLongTimeoutMs: Chromium's threads wait with one hours away), timed out, or lasted
//       kIdleWaitNs (1 s) or more. No time-out at all says nothing: a thread that makes
//       synchronous requests waits for each reply without one (Xlib/xcb's round trips poll
//       with -1: a JVM's main() and event threads make dozens while they create and paint a
//       window, and then idle on a Java monitor, a condition variable the shim does not see,
//       which would be one long "pass" each time).
//       A loop idles in its wait; a helper waits for an answer that comes soon (glibc's
//       resolver polls with a time-out and gets its reply in milliseconds, an X server
//       answers a round trip in microseconds), so however often it asks, it is never taken
//       for a loop.
//   A timer thread that never does work qualifies (its waits time out), and is harmless: its
//   passes are empty. From then on the thread is one of the selected ones (its name matched at
//   that moment) or never asked about again.
//   What this leaves: a helper whose waits keep timing out or answering after a second (a
//   resolver whose server does not answer, a display server that stalls for a second), or
//   that waits with a time-out of 10 s or more (libdbus's blocking calls: 25 s), passes for a
//   loop after four of them, and a
//   thread that ran a loop for a while (idling in it) and then, with its
//   loop's last pass open, blocks elsewhere for good (a worker whose loop ends, the thread going
//   back to a pool) has that time counted as a pass; a loop whose wait is always bounded and
//   always answered (under constant load) is not watched until it idles once.
//
// Where its loop waits: each watched thread learns its loop's wait sites itself, with the main
// thread's rules (loop_wait_sites.h): the site followed above is learned when the thread arms,
// so a wait its handler makes deeper in the stack (a synchronous call inside a gdbus handler) is
// part of the pass, a blocked hang as on the main thread. A runtime's own wait function
// (runtime_waits.cc) is the thread's loop's wait, as on the main thread.
//
// A forked child's thread (the child's only one) becomes its main thread: its state here is
// forgotten (ForgetThreadWaits, from the fork handler).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_WAITS_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_WAITS_H_

#include <errno.h>
#include <stdint.h>

#include "integrations/preload/loop_wait_sites.h"
#include "integrations/preload/shim_state.h"
#include "integrations/preload/wake_trigger.h"

namespace hangwatch::preload {

// What a wait's time-out was.
enum class WaitTimeout : uint8_t {
  kZero,    // only a look: not blocking
  kFinite,  // blocks at most that long, under kLongTimeoutMs
  kLong,    // blocks at most that long, kLongTimeoutMs or more
  kNone,    // blocks until an event
};
// A time-out this long (ms) is a loop's, idling until its next timer (Chromium's threads wait
// with one hours away, and wake for work more often than once a second): longer than a helper
// waits for an answer (glibc's resolver polls for 5 s at most, unless resolv.conf's
// `options timeout:` says 10 or more).
inline constexpr int kLongTimeoutMs = 10'000;

struct ThreadWaits {
  // How often the followed wait must come back (at least once idle) before the thread is taken
  // for a loop: more than a helper's exchange of a request or two, few enough that a loop that
  // wakes a few times is watched from its first seconds.
  static constexpr int kReturnsToArm = 4;
  // A wait that blocked this long was idle, whatever its time-out: longer than a helper waits for
  // an answer that comes (a resolver's reply), shorter than a loop in an idle program waits.
  static constexpr uint64_t kIdleWaitNs = 1'000'000'000;
  enum Phase : uint8_t {
    kFollowing = 0,  // not yet known to be a loop (zero: every thread starts here)
    kWatched,        // the agent watches it: its waits mark its passes
    kNever,          // not selected, or left out: its waits pass straight through for good
    kAsking,         // in watch_thread() now: a wait made meanwhile (a signal handler's) passes
  };
  Phase phase;
  bool idled;  // a wait at `site` had a long time-out, timed out or blocked kIdleWaitNs
  int returns;
  const void* site;  // the wait followed (null: none yet) and the caller's stack pointer there
  uintptr_t cfa;
  int epfd;  // the epoll instance of the wait followed at `cfa` (-1: not epoll); loop_wait_sites.h
  // As g_runtime_wait_depth and g_loop_waits_in_runtime are for the main thread
  // (wait_wrapper.h).
  int runtime_wait_depth;
  bool loop_waits_in_runtime;
  LoopWaitSites sites;  // learned from the moment it is watched
};
// Each thread's own (zero-initialized). Defined in preload_shim.cc.
extern __thread ThreadWaits t_thread_waits __attribute__((tls_model("initial-exec")));

// Asks the agent library to watch the calling thread, once (agent_loader.cc): sets and returns
// its phase, kWatched or kNever (a thread left out is written to the launch log).
ThreadWaits::Phase WatchThisThread();

// The fork child handler: the forking thread is the child's main thread.
inline void ForgetThreadWaits() { t_thread_waits = ThreadWaits{}; }

// Whether the waits of threads other than the main one are followed at all: the process armed
// with HANGWATCH_THREADS other than `main`.
inline bool OtherThreadsFollowed() {
  // Acquire: pairs with the release that set it after the agent library's entries
  // (agent_loader.cc), which this thread calls next.
  return __builtin_expect(__atomic_load_n(&g_shim.other_threads, __ATOMIC_ACQUIRE) != 0, 0) &&
         Phase() == kArmed;
}

// A wait of a thread that is not watched yet returned `result` (0: timed out) after blocking
// `waited_ns`: follows it (the rule above); the phase the thread is in now. Out of line.
__attribute__((noinline)) inline ThreadWaits::Phase FollowThreadWait(WaitTimeout timeout,
                                                                     int result, uint64_t waited_ns,
                                                                     const void* site,
                                                                     uintptr_t cfa, int epfd = -1) {
  ThreadWaits& t = t_thread_waits;
  if (timeout == WaitTimeout::kZero) return t.phase;  // a look, not a wait
  if (t.site == nullptr || (site != t.site && cfa >= t.cfa)) {
    t.site = site;  // the first wait, or one beside or above the one followed: follow it
    t.cfa = cfa;
    t.epfd = epfd;
    t.returns = 0;
    t.idled = false;
  } else if (site != t.site) {
    return t.phase;  // deeper: a handler's
  } else {
    if (cfa > t.cfa) {
      t.cfa = cfa;
      t.epfd = epfd;
    }
    ++t.returns;
  }
  if (timeout == WaitTimeout::kLong || result == 0 || waited_ns >= ThreadWaits::kIdleWaitNs) {
    t.idled = true;
  }
  if (t.returns < ThreadWaits::kReturnsToArm || !t.idled) return t.phase;
  const ThreadWaits::Phase phase = WatchThisThread();
  if (phase == ThreadWaits::kWatched) LearnLoopWaitSite(t.sites, t.site, t.cfa, t.epfd);
  return phase;
}

// The wrapper of a system wait on a thread other than the main one (wait_wrapper.h: Interpose).
template <typename Call, typename Trigger>
inline __attribute__((always_inline)) int InterposeOnOtherThread(WaitTimeout timeout,
                                                                 const void* site, uintptr_t cfa,
                                                                 Call call, Trigger trigger,
                                                                 int epfd) {
  if (!OtherThreadsFollowed()) return call();
  ThreadWaits& t = t_thread_waits;
  if (t.runtime_wait_depth != 0 || t.phase >= ThreadWaits::kNever) return call();
  if (t.phase == ThreadWaits::kFollowing) {
    // Two vDSO clock reads a wait, until the thread is known: how long it blocked.
    const uint64_t start_ns = MonotonicNs();
    const int result = call();
    const int error = errno;
    FollowThreadWait(timeout, result, MonotonicNs() - start_ns, site, cfa, epfd);
    errno = error;
    return result;
  }
  if (t.loop_waits_in_runtime || WaitIsInsidePass(t.sites, site, cfa, epfd)) return call();
  g_shim.about_to_wait();
  const int result = call();
  WokeUpFrom(trigger(result));
  NoteIdleWait(t.sites, timeout != WaitTimeout::kZero, result, site, cfa, epfd);
  return result;
}

// The wrapper of a runtime's wait function on a thread other than the main one
// (wait_wrapper.h: InterposeRuntimeWait): a loop's wait, followed as a system wait is.
template <typename Call>
inline __attribute__((always_inline)) auto InterposeRuntimeWaitOnOtherThread(
    WaitTimeout timeout, const void* site, uintptr_t cfa, Call call) -> decltype(call()) {
  if (!OtherThreadsFollowed()) return call();
  ThreadWaits& t = t_thread_waits;
  if (t.runtime_wait_depth != 0 || t.phase >= ThreadWaits::kNever) return call();
  ++t.runtime_wait_depth;
  const bool watched = t.phase == ThreadWaits::kWatched;
  const uint64_t start_ns = watched ? 0 : MonotonicNs();
  if (watched) {
    if (timeout != WaitTimeout::kZero) t.loop_waits_in_runtime = true;
    g_shim.about_to_wait();
  }
  const auto result = call();
  if (watched) {
    g_shim.woke_up();
  } else {
    const int error = errno;
    // Its own return values: taken as "answered" (not timed out); a wait without a time-out
    // is the idle evidence.
    if (FollowThreadWait(timeout, 1, MonotonicNs() - start_ns, site, cfa) ==
            ThreadWaits::kWatched &&
        timeout != WaitTimeout::kZero) {
      t.loop_waits_in_runtime = true;
    }
    errno = error;
  }
  --t.runtime_wait_depth;
  return result;
}

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_THREAD_WAITS_H_
