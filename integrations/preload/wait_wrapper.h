// The wrappers every interposed wait goes through, and the main thread's state they read:
// Interpose() for the system's wait calls (the poll family, preload_shim.cc),
// InterposeRuntimeWait() for a runtime's own wait function (runtime_waits.cc). Internal to the
// loader, libhangwatch_preload.so (libc only, like shim_state.h).
//
// These run on every wait the program makes: no allocation, no lock, no system call of their
// own, errno untouched (the agent library's about_to_wait / woke_up, called through the
// pointers the loader copied when it armed, are relaxed atomic stores and, with timed passes, a
// vDSO clock read).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_

#include <errno.h>
#include <pthread.h>

#include "integrations/preload/loop_wait_sites.h"
#include "integrations/preload/shim_state.h"
#include "integrations/preload/thread_waits.h"
#include "integrations/preload/wake_trigger.h"

namespace hangwatch::preload {

// Defined in preload_shim.cc. Main thread only (reset by the fork child handler).
// Calls of a runtime's wait function under way on the main thread. The waits such a call makes
// itself (the condition variable Tcl's threaded notifier waits on, the select() of an unthreaded
// Tcl) belong to that one wait: they pass straight through.
extern int g_runtime_wait_depth;
// The main thread waited with a timeout in a runtime's wait function: that function is its
// loop's wait. From then on a system wait made outside it (an Xlib round trip, Tcl's `after ms`
// sleep, both inside a callback) is work of the pass under way, not the loop idling.
extern bool g_loop_waits_in_runtime;

// The wrapper around each interposed system wait. `timeout`: what the call's time-out was; the
// agent arms at the first call on the main thread that may block (a time-out that is not zero),
// a program that only ever polls with a zero timeout has not reached an event loop yet. `site` and
// `cfa`: where it was called from and the caller's stack pointer (loop_wait_sites.h): a wait that
// is not the loop's is part of the pass (no about_to_wait / woke_up), one taken as idle teaches the
// loop's site when it times out (result 0: poll, select and epoll alike) or comes back as a loop's
// wait does (NoteIdleWait). Other threads go to InterposeOnOtherThread (thread_waits.h:
// straight to `call` unless HANGWATCH_THREADS watches them), the main thread while it arms
// straight to `call`. `trigger(result)` says what a watched wait returned (wake_trigger.h),
// for the pass it begins. Its result and errno are returned untouched.
// `epfd`: the epoll instance an epoll wait waits on (-1 for the others): a loop's own wait on
// another instance, deeper than the loop's, is a private loop inside the pass (loop_wait_sites.h).
template <typename Call, typename Trigger>
inline __attribute__((always_inline)) int Interpose(WaitTimeout timeout, const void* site,
                                                    uintptr_t cfa, Call call, Trigger trigger,
                                                    int epfd = -1) {
  if (!pthread_equal(pthread_self(), g_shim.main_thread)) {
    return InterposeOnOtherThread(timeout, site, cfa, call, trigger, epfd);
  }
  if (g_runtime_wait_depth != 0) return call();
  const bool blocking = timeout != WaitTimeout::kZero;
  if (__builtin_expect(Phase() != kArmed, 0)) {
    if (Phase() != kUnarmed || !blocking) return call();
    if (ArmAtFirstWait()) {
      errno = EINTR;  // a handler ran where the wait would have been: interrupted, as it was
      return -1;
    }
    if (Phase() != kArmed) return call();
  }
  if (g_loop_waits_in_runtime || WaitIsInsidePass(g_loop_wait_sites, site, cfa, epfd)) {
    return call();
  }
  if (__builtin_expect(g_shim.main_loop_unseen, 0)) NoteMainLoopAfterJoin();
  g_shim.about_to_wait();
  const int result = call();
  WokeUpFrom(trigger(result));
  NoteIdleWait(g_loop_wait_sites, blocking, result, site, cfa, epfd);
  return result;
}

// The wrapper around a runtime's wait function (runtime_waits.cc): on the main thread the call
// is one wait of the loop, whatever it waits in underneath. A runtime wait made inside another
// (a runtime that calls its own wait function again) is part of the outer one. On other threads
// InterposeRuntimeWaitOnOtherThread (thread_waits.h), with `site` and `cfa` as for Interpose.
template <typename Call>
inline __attribute__((always_inline)) auto InterposeRuntimeWait(WaitTimeout timeout,
                                                                const void* site, uintptr_t cfa,
                                                                Call call) -> decltype(call()) {
  if (!pthread_equal(pthread_self(), g_shim.main_thread)) {
    return InterposeRuntimeWaitOnOtherThread(timeout, site, cfa, call);
  }
  if (g_runtime_wait_depth != 0) return call();
  const bool blocking = timeout != WaitTimeout::kZero;
  ++g_runtime_wait_depth;
  if (__builtin_expect(Phase() != kArmed, 0) && Phase() == kUnarmed && blocking) {
    // A runtime's wait function has its own return values: no EINTR faked here; a signal that
    // came while arming was delivered before the call, which its notifier sees.
    (void)ArmAtFirstWait();
  }
  const bool armed = Phase() == kArmed;
  if (armed) {
    if (__builtin_expect(g_shim.main_loop_unseen, 0) && blocking) NoteMainLoopAfterJoin();
    if (blocking) g_loop_waits_in_runtime = true;
    g_shim.about_to_wait();
  }
  const auto result = call();
  if (armed) g_shim.woke_up();
  --g_runtime_wait_depth;
  return result;
}

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_
