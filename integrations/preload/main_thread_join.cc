// pthread_join on the main thread, before it has waited for events: the launch log notes it once
// per process (LaunchLogMainJoined), so that `hangwatch run` can say why such a program was not
// watched. Some runtimes run the program on a thread of their own and park the process's first
// thread in pthread_join for the whole run: the JVM's launcher (libjli) starts the thread that
// runs main() and joins it, so the main thread of a Java program never waits for events, whatever
// its UI threads do. The shim watches the main thread only; saying "it never waited for events"
// of such a program would send its user looking for a missing event loop.
//
// Not on a hot path: a program joins a thread once per thread it started. The call itself is the
// real one, untouched (arguments, result, errno).
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "integrations/preload/launch_log.h"
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

}  // namespace

extern "C" __attribute__((visibility("default"))) int pthread_join(pthread_t thread,
                                                                   void** result) {
  using hangwatch::preload::g_shim;
  if (hangwatch::preload::Phase() == hangwatch::preload::kUnarmed &&
      !hangwatch::preload::InVforkChild() && pthread_equal(pthread_self(), g_shim.main_thread) &&
      g_logged_pid != g_shim.pid) {
    g_logged_pid = g_shim.pid;
    hangwatch::preload::LaunchLogMainJoined();
  }
  const JoinFn real = RealJoin();
  return real != nullptr ? real(thread, result) : ENOSYS;  // cannot happen: libc has it
}

namespace {

__attribute__((constructor)) void ResolveJoin() { (void)RealJoin(); }

}  // namespace
