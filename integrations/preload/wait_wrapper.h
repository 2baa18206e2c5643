// The wrappers every interposed wait goes through, and the main thread's state they read:
// Interpose() for the system's wait calls (the poll family, preload_shim.cc),
// InterposeRuntimeWait() for a runtime's own wait function (runtime_waits.cc). Internal to
// libhangwatch_preload.so.
//
// These run on every wait the program makes: no allocation, no lock, no system call of their
// own, errno untouched (hangwatch::AboutToWait / WokeUp are relaxed atomic stores and, with
// timed passes, a vDSO clock read).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_

#include <pthread.h>

#include "hangwatch/hangwatch.h"

namespace hangwatch::preload {

enum ShimState : int { kUnarmed, kStarting, kArmed, kOff };

// Defined in preload_shim.cc. Written by the shim's constructor, the main thread and the fork
// child handler (each single-threaded at that moment), read by the main thread (and g_state by
// _exit() on any thread, with atomic loads).
extern pthread_t g_main;
extern int g_state;  // a ShimState
// Calls of a runtime's wait function under way on the main thread. The waits such a call makes
// itself (the condition variable Tcl's threaded notifier waits on, the select() of an unthreaded
// Tcl) belong to that one wait: they pass straight through.
extern int g_runtime_wait_depth;
// The main thread waited with a timeout in a runtime's wait function: that function is its
// loop's wait. From then on a system wait made outside it (an Xlib round trip, Tcl's `after ms`
// sleep, both inside a callback) is work of the pass under way, not the loop idling.
extern bool g_loop_waits_in_runtime;

// The main thread reached its event loop: arms the agent (once; waits made while it starts pass
// straight through). True when the agent is armed afterwards.
bool ArmAtFirstWait();

// The wrapper around each interposed system wait. `blocking`: the call may wait (a timeout that
// is not zero); the agent arms at the first such call, a program that only ever polls with a
// zero timeout has not reached an event loop yet.
template <typename Call>
inline __attribute__((always_inline)) int Interpose(bool blocking, Call call) {
  if (!pthread_equal(pthread_self(), g_main) || g_runtime_wait_depth != 0) return call();
  if (__builtin_expect(g_state != kArmed, 0)) {
    if (g_state != kUnarmed || !blocking || !ArmAtFirstWait()) return call();
  }
  if (g_loop_waits_in_runtime) return call();
  hangwatch::AboutToWait();
  const int result = call();
  hangwatch::WokeUp();  // relaxed atomic stores: errno is untouched
  return result;
}

// The wrapper around a runtime's wait function (runtime_waits.cc): on the main thread the call
// is one wait of the loop, whatever it waits in underneath. A runtime wait made inside another
// (a runtime that calls its own wait function again) is part of the outer one.
template <typename Call>
inline __attribute__((always_inline)) auto InterposeRuntimeWait(bool blocking, Call call)
    -> decltype(call()) {
  if (!pthread_equal(pthread_self(), g_main) || g_runtime_wait_depth != 0) return call();
  ++g_runtime_wait_depth;
  bool armed = g_state == kArmed;
  if (__builtin_expect(!armed, 0) && g_state == kUnarmed && blocking) armed = ArmAtFirstWait();
  if (armed) {
    if (blocking) g_loop_waits_in_runtime = true;
    hangwatch::AboutToWait();
  }
  const auto result = call();
  if (armed) hangwatch::WokeUp();
  --g_runtime_wait_depth;
  return result;
}

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_WAIT_WRAPPER_H_
