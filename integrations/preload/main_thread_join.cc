// pthread_join on the main thread, before it has waited for events. Some runtimes run the program
// on a thread of their own and park the process's first thread in pthread_join for the whole
// run: the JVM's launcher (libjli) starts the thread that runs main() and joins it, so the main
// thread of a Java program never waits for events, whatever its other threads do.
//
//   - HANGWATCH_THREADS other than `main`: the process arms here, as at a first wait, and the
//     main thread waits from the join until its loop's first wake-up, if it ever has one. The
//     threads the program runs on are then followed and watched as their loops show themselves
//     (thread_waits.h): a JVM's NIO selector threads, AWT's toolkit thread. Without this, a
//     process whose main thread never waits for events never arms, and no thread of it is
//     watched. A program whose main thread joins a thread and then runs a loop of its own is
//     watched as before from its loop's first wake-up; its start-up is measured to the join.
//   - Else (the main thread only is watched): the launch log notes the join once per process
//     (LaunchLogMainJoined), so that `hangwatch run` can say why such a program was not watched
//     instead of sending its user looking for a missing event loop.
//
// Not on a hot path: a program joins a thread once per thread it started. The call itself is the
// real one, untouched (arguments, result, errno).
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <string.h>

#include "integrations/preload/launch_log.h"
#include "integrations/preload/load_environment.h"
#include "integrations/preload/shim_state.h"

namespace {

using JoinFn = int (*)(pthread_t, void**);
JoinFn g_pthread_join;
// The process that logged its main thread's join (a forked child logs its own).
pid_t g_logged_pid;

JoinFn RealJoin() {
  JoinFn f = __atomic_load_n(&g_pthread_join, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<JoinFn>(dlsym(RTLD_NEXT, "pthread_join"));
    __atomic_store_n(&g_pthread_join, f, __ATOMIC_RELEASE);
  }
  return f;
}

// HANGWATCH_THREADS names threads besides the main one (the agent library parses it; a malformed
// value leaves it watching the main thread only, and its arm() says so in other_threads).
bool OtherThreadsSelected() {
  const char* threads = hangwatch::preload::ShimSetting("HANGWATCH_THREADS");
  return threads != nullptr && threads[0] != '\0' && strcmp(threads, "main") != 0;
}

}  // namespace

namespace hangwatch::preload {

__attribute__((noinline)) void NoteMainLoopAfterJoin() {
  g_shim.main_loop_unseen = false;
  LaunchLogMainLoop();
}

}  // namespace hangwatch::preload

extern "C" __attribute__((visibility("default"))) int pthread_join(pthread_t thread,
                                                                   void** result) {
  namespace preload = hangwatch::preload;
  using preload::g_shim;
  const JoinFn real = RealJoin();
  if (real == nullptr) return ENOSYS;  // cannot happen: libc has it
  if (preload::Phase() != preload::kUnarmed || preload::InVforkChild() ||
      !pthread_equal(pthread_self(), g_shim.main_thread)) {
    return real(thread, result);
  }
  if (OtherThreadsSelected()) {
    const int saved_errno = errno;
    if (g_logged_pid != g_shim.pid) {
      g_logged_pid = g_shim.pid;
      preload::LaunchLogMainJoined(/*armed=*/true);  // before its `armed` line
    }
    // A signal that came while arming was delivered as it was released: the join goes on.
    (void)preload::ArmAtFirstWait();
    errno = saved_errno;
    if (preload::Phase() == preload::kArmed) {
      // Waiting, until its loop's first wake-up: what it does after the join and before its
      // loop (a JVM's exit) is not a pass of a loop, as before it armed.
      g_shim.main_loop_unseen = true;
      g_shim.about_to_wait();
      return real(thread, result);
    }
  }
  if (preload::Phase() != preload::kArmed && g_logged_pid != g_shim.pid) {
    g_logged_pid = g_shim.pid;
    preload::LaunchLogMainJoined();
  }
  return real(thread, result);
}

namespace {

__attribute__((constructor)) void ResolveJoin() { (void)RealJoin(); }

}  // namespace
