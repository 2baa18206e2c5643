// libhangwatch_preload.so: watches the main thread of an unmodified program.
//
// An event loop idles in one of a handful of calls (epoll_wait, poll, select and their
// variants). The shim defines those symbols; the dynamic linker binds the program's calls to
// them because the shim is preloaded. On the main thread, entering one is "about to wait" and
// returning from it is "woke up" (hangwatch::AboutToWait / WokeUp: each a relaxed load and store
// of the run-loop state word, and a read of the pass clock unless HANGWATCH_TIME_PASSES=0);
// the real call, resolved once with dlsym(RTLD_NEXT), runs in between with the same arguments,
// and its result and errno are returned untouched. Other threads pass straight through.
//
// Life cycle:
//   - load (constructor): resolves the real calls, notes the main thread and the load time,
//     reads HANGWATCH_* (preload_config.h; none in a secure-execution process, which gets
//     nothing printed or written), notes the process in the launch log (launch_log.h). The
//     environment is left alone: a process that has not armed (a shell, a wrapper) passes the
//     shim on to what it executes (preload_exec.cc).
//   - first blocking wait on the main thread: the program reached its event loop. Start-up
//     longer than HANGWATCH_STARTUP_MS is reported once as a start-up stall (a
//     {"type":"startup_stall"} line and a stderr line), then hangwatch::Start() arms the agent.
//     Lines go to stderr only when descriptor 2 is one the shim may print on (shim_stderr.h).
//     Starting lazily, on the main thread, from inside the program's own loop, means batch work
//     before the loop is never a hang and Start() never runs before the program's constructors.
//     Waits made while Start() runs pass straight through (no recursion). Once armed, unless
//     HANGWATCH_INHERIT=1, programs this process (or a child forked from it) executes run
//     without the shim.
//   - fork: every child arms itself at its own first wait, with its own agent (the parent's
//     is abandoned in the child: agent.cc), open-hang file and pid: prefork servers' workers
//     and daemons (which fork before or after their loop) are watched.
//   - exit: hangwatch::Stop() so that a hang that just ended is written out. _exit() and
//     _Exit() (forked workers, Python's os._exit, signal handlers) run no atexit handler: the
//     shim interposes them too and has the watchdog write the open hang and the lag interval
//     first (agent/exit_flush.h: safe in a signal handler, never holds the exit up for long).
//
// The agent is linked in statically and every symbol but the interposed calls is hidden
// (version script), so the shim does not clash with a program that links libhangwatch itself.
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "agent/exit_flush.h"
#include "agent/sinks/jsonl_sink.h"
#include "hangwatch/hangwatch.h"
#include "integrations/preload/launch_log.h"
#include "integrations/preload/preload_config.h"
#include "integrations/preload/shim_state.h"
#include "integrations/preload/shim_stderr.h"
#include "report/report_record.h"
#include "unwind/proc_files.h"

namespace {

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

// A missing real call (an old libc without epoll_pwait2): fail like the kernel would.
int NoSuchCall() {
  errno = ENOSYS;
  return -1;
}

// Main-thread state. Written by the constructor, the main thread and the fork child handler
// (each single-threaded at that moment), read by the main thread only.
enum State : int { kUnarmed, kStarting, kArmed, kOff };
int g_state = kOff;
bool g_lineage_armed = false;        // this process, or one it was forked from, armed
std::string* g_self_path = nullptr;  // leaked on purpose: read by exec calls until exit
pthread_t g_main{};
pid_t g_armed_pid = 0;
uint64_t g_load_ns = 0;
hangwatch::preload::PreloadConfig* g_config = nullptr;  // leaked on purpose: used until exit
bool g_secure = false;  // secure execution (AT_SECURE): nothing printed, nothing written

// This process's open-hang file, removed by an _exit() once the watchdog has written the hang
// (exit() has Stop() remove it). Fixed storage: read in _exit(), maybe in a signal handler.
char g_open_hang_path[4096];
dev_t g_open_hang_dev = 0;
ino_t g_open_hang_ino = 0;

void NoteOpenHangFile(const std::string& path) {
  struct stat st {};
  g_open_hang_path[0] = '\0';
  if (path.empty() || path.size() >= sizeof g_open_hang_path || lstat(path.c_str(), &st) != 0) {
    return;
  }
  memcpy(g_open_hang_path, path.c_str(), path.size() + 1);
  g_open_hang_dev = st.st_dev;
  g_open_hang_ino = st.st_ino;
}

// Async-signal-safe: lstat and unlink. Only while the name is still our file.
void RemoveOpenHangFile() {
  struct stat st {};
  if (g_open_hang_path[0] != '\0' && lstat(g_open_hang_path, &st) == 0 &&
      st.st_dev == g_open_hang_dev && st.st_ino == g_open_hang_ino) {
    unlink(g_open_hang_path);
  }
}

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string ExePath() {
  char buf[4096];
  const ssize_t n = hangwatch::unwind::ReadExePath(buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// One {"type":"startup_stall"} record (docs/report-format.md), written to the report file by
// the agent's JSON Lines sink, as the agent's hangs will be: the report codec's encoding, one
// write per line, rotation and torn-line recovery.
void ReportStartupStall(uint64_t startup_ms) {
  const auto& c = *g_config;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  if (c.log) {
    hangwatch::preload::ShimPrint(
        "hangwatch: start-up stall: the main thread first waited for events %llu ms after "
        "start (start-up threshold %u ms)",
        static_cast<unsigned long long>(startup_ms), c.startup_ms);
  }
  if (c.report_path.empty()) return;
  hangwatch::report::StartupStall stall;
  stall.pid = getpid();
  stall.process = ExePath();
  stall.start_unix_ms = now_ms - static_cast<int64_t>(startup_ms);
  stall.duration_ms = startup_ms;
  stall.threshold_ms = c.startup_ms;
  // The agent's file settings: the same size limit as the hangs written to this file later.
  hangwatch::agent::JsonlSink sink(c.report_path, hangwatch::Config{}.json_max_bytes);
  std::string error;
  hangwatch::agent::SinkErrors errors;
  // Failures are not reported: the stderr line above is the live report, and the agent,
  // started next with the same path, says so if the file cannot be written.
  if (sink.Open(&error)) sink.OnStartupStall(stall, &errors);
}

void StopAtExit() {
  if (g_state == kArmed && getpid() == g_armed_pid) hangwatch::agent::StopAtProcessExit();
}

// _exit()/_Exit() on any thread, possibly in a signal handler: only atomic reads and stores and
// async-signal-safe calls. The pid check keeps a vfork() child, which shares the parent's
// memory and so sees its agent armed, from asking the parent's watchdog to stop.
void BeforeExit() {
  if (__atomic_load_n(&g_state, __ATOMIC_RELAXED) != kArmed ||
      getpid() != __atomic_load_n(&g_armed_pid, __ATOMIC_RELAXED)) {
    return;
  }
  // The watchdog wrote the hang open now, if any: the open-hang file says nothing any more (a
  // prefork server's exited workers would otherwise leave one each in the run directory).
  if (hangwatch::agent::FlushBeforeExit()) RemoveOpenHangFile();
}

[[noreturn]] void ExitNow(ExitFn real, int status) {
  BeforeExit();
  if (real != nullptr) real(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// The main thread reached its event loop: arm the agent. Runs once per process.
__attribute__((noinline)) void Arm() {
  const int saved_errno = errno;
  g_state = kStarting;  // waits made by Start() itself pass straight through
  const auto& c = *g_config;
  // Descriptor 2 now, in this process: a daemon may have replaced it since the shim was loaded.
  hangwatch::preload::DecideStderr(!g_secure);
  const uint64_t startup_ms = (MonotonicNs() - g_load_ns) / 1000000u;
  if (c.startup_stall && startup_ms > c.startup_ms) ReportStartupStall(startup_ms);

  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(c.threshold_ms);
  config.sample_interval = std::chrono::milliseconds(c.sample_ms);
  config.json_path = c.report_path;
  config.log_hangs = c.log && hangwatch::preload::StderrUsable();
  if (config.log_hangs) config.logger = hangwatch::preload::GuardedStderrLogger();
  config.log_lag = c.log_lag;
  // The shim is on every wait already: timing each pass costs two counter reads.
  config.time_every_pass = c.time_passes;
  config.lag_interval = std::chrono::milliseconds(c.lag_interval_ms);
  if (!c.open_hang_dir.empty()) {
    config.open_hang_path = c.open_hang_dir + "/open-hang." + std::to_string(getpid());
  }
  const hangwatch::Status status = hangwatch::Start(config);
  if (status.ok()) {
    g_armed_pid = getpid();
    NoteOpenHangFile(config.open_hang_path);
    static bool registered = false;  // survives fork: one handler per process image
    if (!registered) registered = atexit(StopAtExit) == 0;
    g_state = kArmed;
    g_lineage_armed = true;
    if (!c.inherit) hangwatch::preload::StripShimFromOwnEnvironment();
    hangwatch::preload::LaunchLogArmed();
  } else {
    hangwatch::preload::ShimPrint("hangwatch preload: not watching: %s", status.message().c_str());
    g_state = kOff;
    hangwatch::preload::LaunchLogOff(status.message().c_str());
  }
  errno = saved_errno;
}

void ForkChild() {
  // The calling thread is the child's only thread, hence its main thread. A child of an armed
  // process arms again at its own first wait (the parent's agent is left behind by the
  // agent's own fork handler); one whose parent could not arm stays off.
  g_main = pthread_self();
  g_load_ns = MonotonicNs();
  if (g_state == kArmed || g_state == kStarting) g_state = kUnarmed;
  if (g_state == kUnarmed) hangwatch::preload::LaunchLogLoaded();
}

// The wrapper around every interposed call. `blocking`: the call may wait (a timeout that is
// not zero); the agent arms at the first such call, a program that only ever polls with a zero
// timeout has not reached an event loop yet.
template <typename Call>
inline __attribute__((always_inline)) int Interpose(bool blocking, Call call) {
  if (!pthread_equal(pthread_self(), g_main)) return call();
  if (__builtin_expect(g_state != kArmed, 0)) {
    if (g_state != kUnarmed || !blocking || g_config == nullptr) return call();
    Arm();
    if (g_state != kArmed) return call();
  }
  hangwatch::AboutToWait();
  const int result = call();
  hangwatch::WokeUp();  // relaxed atomic stores: errno is untouched
  return result;
}

bool IsBlocking(const struct timespec* ts) {
  return ts == nullptr || ts->tv_sec != 0 || ts->tv_nsec != 0;
}
bool IsBlocking(const struct timeval* tv) {
  return tv == nullptr || tv->tv_sec != 0 || tv->tv_usec != 0;
}

std::string SelfPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&SelfPath), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "";
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

  g_load_ns = MonotonicNs();
  // A set-user-ID (or set-group-ID, or capability-raising) program: its environment is its
  // caller's, and so would be whatever the shim prints (its stacks, their addresses).
  g_secure = getauxval(AT_SECURE) != 0;
  std::vector<std::string> warnings;
  g_config = new hangwatch::preload::PreloadConfig(
      g_secure
          ? hangwatch::preload::SecureExecutionConfig()
          : hangwatch::preload::ReadPreloadConfig(
                [](const char* name) -> const char* { return secure_getenv(name); }, &warnings));
  hangwatch::preload::DecideStderr(!g_secure);
  for (const auto& w : warnings) hangwatch::preload::ShimPrint("hangwatch preload: %s", w.c_str());
  g_self_path = new std::string(SelfPath());
  hangwatch::preload::ResolveExecCalls();
  hangwatch::preload::LaunchLogInit();
  hangwatch::preload::LaunchLogLoaded();
  // Records the report file did not take reach `hangwatch run` through the launch log.
  hangwatch::agent::SetUnwrittenRecordObserver(hangwatch::preload::LaunchLogUnwritten);

  // Loaded by ld.so at start-up, the constructor runs on the main thread. Loaded later by
  // dlopen on another thread, the shim cannot tell which thread is the main one: it stays off.
  if (syscall(SYS_gettid) == getpid()) {
    g_main = pthread_self();
    g_state = kUnarmed;
  }
  pthread_atfork(nullptr, nullptr, ForkChild);
}

}  // namespace

namespace hangwatch::preload {

bool ExecKeepsShim() { return g_config == nullptr || g_config->inherit || !g_lineage_armed; }

const char* ShimPath() { return g_self_path != nullptr ? g_self_path->c_str() : ""; }

}  // namespace hangwatch::preload

#define HW_REAL(slot, name) (Resolve(&(slot), name))
#define HW_INTERPOSE __attribute__((visibility("default")))

extern "C" {

HW_INTERPOSE int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
  auto f = HW_REAL(g_poll, "poll");
  return Interpose(timeout != 0, [&] { return f ? f(fds, nfds, timeout) : NoSuchCall(); });
}

HW_INTERPOSE int __poll_chk(struct pollfd* fds, nfds_t nfds, int timeout, size_t fdslen) {
  auto f = HW_REAL(g_poll_chk, "__poll_chk");
  return Interpose(timeout != 0, [&] { return f ? f(fds, nfds, timeout, fdslen) : NoSuchCall(); });
}

HW_INTERPOSE int ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                       const sigset_t* sigmask) {
  auto f = HW_REAL(g_ppoll, "ppoll");
  return Interpose(IsBlocking(timeout),
                   [&] { return f ? f(fds, nfds, timeout, sigmask) : NoSuchCall(); });
}

HW_INTERPOSE int __ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                             const sigset_t* sigmask, size_t fdslen) {
  auto f = HW_REAL(g_ppoll_chk, "__ppoll_chk");
  return Interpose(IsBlocking(timeout),
                   [&] { return f ? f(fds, nfds, timeout, sigmask, fdslen) : NoSuchCall(); });
}

HW_INTERPOSE int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                        struct timeval* timeout) {
  auto f = HW_REAL(g_select, "select");
  return Interpose(IsBlocking(timeout), [&] {
    return f ? f(nfds, readfds, writefds, exceptfds, timeout) : NoSuchCall();
  });
}

HW_INTERPOSE int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                         const struct timespec* timeout, const sigset_t* sigmask) {
  auto f = HW_REAL(g_pselect, "pselect");
  return Interpose(IsBlocking(timeout), [&] {
    return f ? f(nfds, readfds, writefds, exceptfds, timeout, sigmask) : NoSuchCall();
  });
}

HW_INTERPOSE int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  auto f = HW_REAL(g_epoll_wait, "epoll_wait");
  return Interpose(timeout != 0,
                   [&] { return f ? f(epfd, events, maxevents, timeout) : NoSuchCall(); });
}

HW_INTERPOSE int epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout,
                             const sigset_t* sigmask) {
  auto f = HW_REAL(g_epoll_pwait, "epoll_pwait");
  return Interpose(timeout != 0,
                   [&] { return f ? f(epfd, events, maxevents, timeout, sigmask) : NoSuchCall(); });
}

HW_INTERPOSE int epoll_pwait2(int epfd, struct epoll_event* events, int maxevents,
                              const struct timespec* timeout, const sigset_t* sigmask) {
  auto f = HW_REAL(g_epoll_pwait2, "epoll_pwait2");
  return Interpose(IsBlocking(timeout),
                   [&] { return f ? f(epfd, events, maxevents, timeout, sigmask) : NoSuchCall(); });
}

HW_INTERPOSE void _exit(int status) { ExitNow(HW_REAL(g_exit, "_exit"), status); }

HW_INTERPOSE void _Exit(int status) noexcept { ExitNow(HW_REAL(g_exit_upper, "_Exit"), status); }

}  // extern "C"
