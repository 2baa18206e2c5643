// libhangwatch_preload.so: watches the main thread of an unmodified program.
//
// An event loop idles in one of a handful of calls (epoll_wait, poll, select and their
// variants). The shim defines those symbols; the dynamic linker binds the program's calls to
// them because the shim is preloaded. On the main thread, entering one is "about to wait" and
// returning from it is "woke up" (hangwatch::AboutToWait / WokeUp: each a relaxed load and store
// of the run-loop state word, and a read of the pass clock unless HANGWATCH_TIME_PASSES=0);
// the real call, resolved once with dlsym(RTLD_NEXT), runs in between with the same arguments,
// and its result and errno are returned untouched. Other threads pass straight through, unless
// HANGWATCH_THREADS watches them: then a thread whose waits show a loop is watched as well
// (thread_waits.h).
// A wait the main thread makes inside a handler (a synchronous network call) is not the loop's:
// the shim learns the loop's call site and depth (loop_wait_sites.h) and lets the pass continue
// through waits made elsewhere, so they are blocked hangs.
// Some runtimes idle elsewhere (threaded Tcl waits on a condition variable while a notifier
// thread polls): the shim interposes their own wait functions too (runtime_waits.cc), and once
// the main thread waits in one, that is its loop's wait (wait_wrapper.h).
//
// The shim is two libraries. This one, the loader, is what LD_PRELOAD names and what every
// process of a command under `hangwatch run` loads: libc only (no C++ runtime, no Abseil, no
// spdlog, no elfutils), so that a process that never waits for events (a compiler, a shell, a
// tool a build runs thousands of times) pays for little more than mapping it. It holds the
// interposers, the launch log and the main-thread bookkeeping. The agent and everything heavy
// (the settings, hangwatch::Start, the start-up stall record, the live report) are in
// libhangwatch_preload_agent.so, which the loader dlopen()s from its own directory when the
// main thread first waits for events (agent_loader.cc, agent_entry.h).
//
// Life cycle:
//   - load (constructor): resolves the real calls, notes the main thread and the load time,
//     whether this is a secure-execution process (AT_SECURE: its settings are the defaults and
//     nothing is printed or written), notes the process in the launch log (launch_log.h), and
//     leaves a program whose threads wait without libc (Go: unseen_waits.h) off for good. The
//     environment is left alone: a process that has not armed (a shell, a wrapper) passes the
//     shim on to what it executes (preload_exec.cc).
//   - first blocking wait on the main thread: the program reached its event loop. The agent
//     library is loaded, reads HANGWATCH_* (preload_config.h), reports a start-up longer than
//     HANGWATCH_STARTUP_MS once as a start-up stall (a {"type":"startup_stall"} line and a
//     stderr line), then hangwatch::Start() arms the agent (preload_agent.cc). Lines go to
//     stderr only when descriptor 2 is one the shim may print on (shim_stderr.h). Starting
//     lazily, on the main thread, from inside the program's own loop, means batch work before
//     the loop is never a hang and Start() never runs before the program's constructors. Waits
//     made while the library loads or Start() runs pass straight through (no recursion). Once
//     armed, unless HANGWATCH_INHERIT=1, programs this process (or a child forked from it)
//     executes run without the shim.
//   - fork: every child arms itself at its own first wait, with its own agent (the parent's
//     is abandoned in the child: agent.cc), open-hang file and pid: prefork servers' workers
//     and daemons (which fork before or after their loop) are watched.
//   - user change (privilege_drop.cc): at the first setuid/setgid/setgroups/initgroups (or a
//     variant) in a process, before the real call, the report, the launch log and the process's
//     open-hang file are opened and their descriptors kept (hang/files/kept_files.h: the loader's
//     table, which the agent library reads through it), and the agent library is loaded, so
//     that a server that drops root (nginx's workers) is still watched and its files stay the
//     watcher's.
//   - exit: hangwatch::Stop() so that a hang that just ended is written out. _exit() and
//     _Exit() (forked workers, Python's os._exit, signal handlers) run no atexit handler: the
//     shim interposes them too and has the watchdog write the open hang and the lag interval
//     first (agent/core/exit_flush.h: safe in a signal handler, never holds the exit up for long).
//
// Every symbol but the interposed calls is hidden (version script), in both libraries, so the
// shim does not clash with a program that links libhangwatch itself.
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "integrations/preload/launch_log.h"
#include "integrations/preload/shim_state.h"
#include "integrations/preload/unseen_waits.h"
#include "integrations/preload/wait_wrapper.h"

namespace hangwatch::preload {

ShimState g_shim;
int g_runtime_wait_depth = 0;
bool g_loop_waits_in_runtime = false;
LoopWaitSites g_loop_wait_sites{};
__thread ThreadWaits t_thread_waits __attribute__((tls_model("initial-exec")));

}  // namespace hangwatch::preload

namespace {

using hangwatch::preload::EpollTrigger;
using hangwatch::preload::g_shim;
using hangwatch::preload::Interpose;
using hangwatch::preload::MonotonicNs;
using hangwatch::preload::PollTrigger;
using hangwatch::preload::SelectTrigger;
using hangwatch::preload::TimeoutMsOf;

using PollFn = int (*)(struct pollfd*, nfds_t, int);
using PollChkFn = int (*)(struct pollfd*, nfds_t, int, size_t);
using PpollFn = int (*)(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*);
using PpollChkFn = int (*)(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*, size_t);
using SelectFn = int (*)(int, fd_set*, fd_set*, fd_set*, struct timeval*);
using PselectFn = int (*)(int, fd_set*, fd_set*, fd_set*, const struct timespec*, const sigset_t*);
using EpollWaitFn = int (*)(int, struct epoll_event*, int, int);
using EpollPwaitFn = int (*)(int, struct epoll_event*, int, int, const sigset_t*);
using EpollPwait2Fn = int (*)(int, struct epoll_event*, int, const struct timespec*,
                              const sigset_t*);
using ExitFn = void (*)(int);

// The real calls. Resolved by the constructor; Real() also resolves on first use in case a
// library constructor that runs before ours already waits.
template <typename Fn>
Fn Resolve(Fn* slot, const char* name) {
  Fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f;
}
PollFn g_poll;
PollChkFn g_poll_chk;
PpollFn g_ppoll;
PpollChkFn g_ppoll_chk;
SelectFn g_select;
PselectFn g_pselect;
EpollWaitFn g_epoll_wait;
EpollPwaitFn g_epoll_pwait;
EpollPwait2Fn g_epoll_pwait2;
ExitFn g_exit;
ExitFn g_exit_upper;  // _Exit

// The shim's own path, as the dynamic linker loaded it (dladdr); read by exec calls until exit.
char g_self_path[4096];

// A missing real call (an old libc without epoll_pwait2): fail like the kernel would.
int NoSuchCall() {
  errno = ENOSYS;
  return -1;
}

// _exit()/_Exit() on any thread, possibly in a signal handler: only atomic reads and stores and
// async-signal-safe calls (the agent library's before_exit is too). The pid check keeps a
// vfork() child, which shares the parent's memory and so sees its agent armed, from asking the
// parent's watchdog to stop.
void BeforeExit() {
  if (hangwatch::preload::Phase() != hangwatch::preload::kArmed ||
      getpid() != __atomic_load_n(&g_shim.armed_pid, __ATOMIC_RELAXED)) {
    return;
  }
  g_shim.agent->before_exit(pthread_equal(pthread_self(), g_shim.main_thread) ? 1 : 0);
}

[[noreturn]] void ExitNow(ExitFn real, int status) {
  BeforeExit();
  if (real != nullptr) real(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

void ForkChild() {
  using hangwatch::preload::Phase;
  using hangwatch::preload::SetPhase;
  // The calling thread is the child's only thread, hence its main thread. A child of an armed
  // process arms again at its own first wait (the parent's agent is left behind by the
  // agent's own fork handler); one whose parent could not arm stays off.
  g_shim.main_thread = pthread_self();
  g_shim.pid = getpid();
  g_shim.load_ns = MonotonicNs();
  // This thread may have forked while the parent's main thread was inside a runtime's wait, and
  // its loop may not be the parent's: the child finds its own loop's wait.
  hangwatch::preload::g_runtime_wait_depth = 0;
  hangwatch::preload::g_loop_waits_in_runtime = false;
  hangwatch::preload::ForgetLoopWaitSites();
  hangwatch::preload::ForgetThreadWaits();
  g_shim.other_threads = 0;  // set again when the child arms
  g_shim.main_loop_unseen = false;
  hangwatch::preload::ForgetParentsKeptFiles();
  if (hangwatch::preload::LoadingAgent()) {
    // The parent was loading the agent library (dlopen half done: its copy here is not safe to
    // call into) or starting the agent, on another thread or under the signal handler that
    // forked: this child is not watched.
    SetPhase(hangwatch::preload::kOff);
    hangwatch::preload::LaunchLogLoaded();
    hangwatch::preload::LaunchLogOff("forked while its parent was loading hangwatch's agent");
    return;
  }
  if (Phase() == hangwatch::preload::kArmed || Phase() == hangwatch::preload::kStarting) {
    SetPhase(hangwatch::preload::kUnarmed);
  }
  if (Phase() == hangwatch::preload::kUnarmed) hangwatch::preload::LaunchLogLoaded();
}

using hangwatch::preload::WaitTimeout;
WaitTimeout TimeoutOfMs(long long ms) {
  return ms == 0                                   ? WaitTimeout::kZero
         : ms < hangwatch::preload::kLongTimeoutMs ? WaitTimeout::kFinite
                                                   : WaitTimeout::kLong;
}
WaitTimeout TimeoutOf(int timeout_ms) {
  return timeout_ms < 0 ? WaitTimeout::kNone : TimeoutOfMs(timeout_ms);
}
WaitTimeout TimeoutOf(const struct timespec* ts) {
  if (ts == nullptr) return WaitTimeout::kNone;
  if (ts->tv_sec == 0 && ts->tv_nsec == 0) return WaitTimeout::kZero;
  return ts->tv_sec >= hangwatch::preload::kLongTimeoutMs / 1000 ? WaitTimeout::kLong
                                                                 : WaitTimeout::kFinite;
}
WaitTimeout TimeoutOf(const struct timeval* tv) {
  if (tv == nullptr) return WaitTimeout::kNone;
  if (tv->tv_sec == 0 && tv->tv_usec == 0) return WaitTimeout::kZero;
  return tv->tv_sec >= hangwatch::preload::kLongTimeoutMs / 1000 ? WaitTimeout::kLong
                                                                 : WaitTimeout::kFinite;
}

void NoteSelfPath() {
  Dl_info info{};
  g_self_path[0] = '\0';
  if (dladdr(reinterpret_cast<void*>(&NoteSelfPath), &info) != 0 && info.dli_fname != nullptr &&
      strlen(info.dli_fname) < sizeof g_self_path) {
    strcpy(g_self_path, info.dli_fname);
  }
}

__attribute__((constructor)) void LoadShim() {
  Resolve(&g_poll, "poll");
  Resolve(&g_poll_chk, "__poll_chk");
  Resolve(&g_ppoll, "ppoll");
  Resolve(&g_ppoll_chk, "__ppoll_chk");
  Resolve(&g_select, "select");
  Resolve(&g_pselect, "pselect");
  Resolve(&g_epoll_wait, "epoll_wait");
  Resolve(&g_epoll_pwait, "epoll_pwait");
  Resolve(&g_epoll_pwait2, "epoll_pwait2");
  Resolve(&g_exit, "_exit");
  Resolve(&g_exit_upper, "_Exit");

  g_shim.load_ns = MonotonicNs();
  g_shim.pid = getpid();
  // A set-user-ID (or set-group-ID, or capability-raising) program: its environment is its
  // caller's, and so would be whatever the shim prints (its stacks, their addresses).
  g_shim.secure = getauxval(AT_SECURE) != 0;
  NoteSelfPath();
  hangwatch::preload::NoteAgentLibraryPath();
  hangwatch::preload::ResolveExecCalls();
  hangwatch::preload::ResolveUserChangeCalls();
  hangwatch::preload::LaunchLogInit();
  hangwatch::preload::LaunchLogLoaded();

  // Loaded by ld.so at start-up, the constructor runs on the main thread. Loaded later by
  // dlopen on another thread, the shim cannot tell which thread is the main one: it stays off.
  if (syscall(SYS_gettid) == g_shim.pid) {
    g_shim.main_thread = pthread_self();
    // A program whose loop waits without libc (Go) is never armed: a stray C wait of its main
    // thread would turn the rest of its run into one pass (unseen_waits.h).
    if (const char* why = hangwatch::preload::WhyWaitsAreUnseen()) {
      hangwatch::preload::LaunchLogOff(why);
    } else {
      hangwatch::preload::SetPhase(hangwatch::preload::kUnarmed);
    }
  }
  pthread_atfork(nullptr, nullptr, ForkChild);
}

}  // namespace

namespace hangwatch::preload {

bool ExecKeepsShim() { return g_shim.inherit || !g_shim.lineage_armed; }

const char* ShimPath() { return g_self_path; }

}  // namespace hangwatch::preload

#define HW_REAL(slot, name) (Resolve(&(slot), name))
#define HW_INTERPOSE __attribute__((visibility("default")))
// Where the interposed call was made from, and the caller's stack pointer (loop_wait_sites.h).
#define HW_SITE __builtin_return_address(0), reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa())

extern "C" {

HW_INTERPOSE int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
  auto f = HW_REAL(g_poll, "poll");
  return Interpose(
      TimeoutOf(timeout), HW_SITE, [&] { return f ? f(fds, nfds, timeout) : NoSuchCall(); },
      [&](int r) { return PollTrigger(fds, nfds, r, TimeoutMsOf(timeout)); });
}

HW_INTERPOSE int __poll_chk(struct pollfd* fds, nfds_t nfds, int timeout, size_t fdslen) {
  auto f = HW_REAL(g_poll_chk, "__poll_chk");
  return Interpose(
      TimeoutOf(timeout), HW_SITE, [&] { return f ? f(fds, nfds, timeout, fdslen) : NoSuchCall(); },
      [&](int r) { return PollTrigger(fds, nfds, r, TimeoutMsOf(timeout)); });
}

HW_INTERPOSE int ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                       const sigset_t* sigmask) {
  auto f = HW_REAL(g_ppoll, "ppoll");
  const uint64_t ms = TimeoutMsOf(timeout);
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(fds, nfds, timeout, sigmask) : NoSuchCall(); },
      [&](int r) { return PollTrigger(fds, nfds, r, ms); });
}

HW_INTERPOSE int __ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                             const sigset_t* sigmask, size_t fdslen) {
  auto f = HW_REAL(g_ppoll_chk, "__ppoll_chk");
  const uint64_t ms = TimeoutMsOf(timeout);
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(fds, nfds, timeout, sigmask, fdslen) : NoSuchCall(); },
      [&](int r) { return PollTrigger(fds, nfds, r, ms); });
}

HW_INTERPOSE int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                        struct timeval* timeout) {
  auto f = HW_REAL(g_select, "select");
  const uint64_t ms = TimeoutMsOf(timeout);  // before the call, which may change *timeout
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(nfds, readfds, writefds, exceptfds, timeout) : NoSuchCall(); },
      [&](int r) { return SelectTrigger(nfds, readfds, writefds, exceptfds, r, ms); });
}

HW_INTERPOSE int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                         const struct timespec* timeout, const sigset_t* sigmask) {
  auto f = HW_REAL(g_pselect, "pselect");
  const uint64_t ms = TimeoutMsOf(timeout);
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(nfds, readfds, writefds, exceptfds, timeout, sigmask) : NoSuchCall(); },
      [&](int r) { return SelectTrigger(nfds, readfds, writefds, exceptfds, r, ms); });
}

HW_INTERPOSE int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  auto f = HW_REAL(g_epoll_wait, "epoll_wait");
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(epfd, events, maxevents, timeout) : NoSuchCall(); },
      [&](int r) { return EpollTrigger(epfd, events, r, TimeoutMsOf(timeout)); }, epfd);
}

HW_INTERPOSE int epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout,
                             const sigset_t* sigmask) {
  auto f = HW_REAL(g_epoll_pwait, "epoll_pwait");
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(epfd, events, maxevents, timeout, sigmask) : NoSuchCall(); },
      [&](int r) { return EpollTrigger(epfd, events, r, TimeoutMsOf(timeout)); }, epfd);
}

HW_INTERPOSE int epoll_pwait2(int epfd, struct epoll_event* events, int maxevents,
                              const struct timespec* timeout, const sigset_t* sigmask) {
  auto f = HW_REAL(g_epoll_pwait2, "epoll_pwait2");
  return Interpose(
      TimeoutOf(timeout), HW_SITE,
      [&] { return f ? f(epfd, events, maxevents, timeout, sigmask) : NoSuchCall(); },
      [&](int r) { return EpollTrigger(epfd, events, r, TimeoutMsOf(timeout)); }, epfd);
}

HW_INTERPOSE void _exit(int status) { ExitNow(HW_REAL(g_exit, "_exit"), status); }

HW_INTERPOSE void _Exit(int status) noexcept { ExitNow(HW_REAL(g_exit_upper, "_Exit"), status); }

}  // extern "C"
