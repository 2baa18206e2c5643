// The loader's side of arming (shim_state.h): loading libhangwatch_preload_agent.so from the
// loader's own directory, handing it the loader's services and taking its entries
// (agent_entry.h), the settings' files for the calls that change user (ShimFilesOfThisProcess),
// and the bookkeeping of a process that armed (atexit, the launch log, the environment). libc only,
// like the rest of the loader.
//
// The agent library is found by the loader's own path (dladdr), never by a search: the loader
// is loaded into processes of every user, as root under sudo, and `hangwatch run` checked that
// no one else can change what is in its directory (tools/run/run_shim.h). RTLD_LOCAL keeps the
// agent's symbols out of the program's lookups, RTLD_NOW resolves everything while the program
// waits anyway (never later, in a signal handler), RTLD_NODELETE keeps it mapped for the
// watchdog thread whatever happens to the handle.
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hang/files/kept_files.h"
#include "integrations/preload/agent_entry.h"
#include "integrations/preload/launch_log.h"
#include "integrations/preload/load_environment.h"
#include "integrations/preload/shim_state.h"
#include "integrations/preload/shim_stderr.h"
#include "integrations/preload/thread_waits.h"

namespace hangwatch::preload {
namespace {

pthread_once_t g_prepare_once = PTHREAD_ONCE_INIT;
const HangwatchPreloadAgent* g_prepared = nullptr;
// Set while this process loads the agent library or starts the agent (LoadingAgent()).
int g_loading = 0;

// Marks the load of the agent library and the start of the agent, for the fork child handler
// (LoadingAgent()): a child forked meanwhile by another thread has a half-relocated copy of
// the library and a loader lock held by a thread that is not there, and stays off.
class LoadingMark {
 public:
  LoadingMark() { __atomic_add_fetch(&g_loading, 1, __ATOMIC_ACQ_REL); }
  ~LoadingMark() { __atomic_sub_fetch(&g_loading, 1, __ATOMIC_ACQ_REL); }
  LoadingMark(const LoadingMark&) = delete;
  LoadingMark& operator=(const LoadingMark&) = delete;
};

// Every signal this thread can block stays pending while the agent library is loaded and the
// agent started, and is delivered right after. A handler that ran in the middle of dlopen()
// could fork (PostgreSQL 15's postmaster starts its children from its SIGUSR1 and SIGCHLD
// handlers): the child's copy of the library was half-relocated, and it crashed calling
// through the entry table. Once per process image, for the few milliseconds of a dlopen and
// Start().
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

  // A signal arrived meanwhile that the program had not blocked and handles: delivered when
  // this object goes, right before the program's wait would start. A handler that expects to
  // interrupt that wait (Xvfb's SIGTERM sets a flag its loop reads when the wait returns)
  // would then sleep on: the wait must return EINTR instead, as it would have.
  bool HandledSignalPending() const {
    sigset_t pending;
    if (sigpending(&pending) != 0) return false;
    // Real-time signals are left out: the agent's own capture signal is one (Start() may
    // request a capture of this thread meanwhile), and loops are not woken by them.
    for (int s = 1; s < SIGRTMIN; ++s) {
      if (sigismember(&pending, s) != 1 || sigismember(&old_, s) == 1) continue;
      struct sigaction sa {};
      if (sigaction(s, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
        return true;
      }
    }
    return false;
  }

 private:
  sigset_t old_;
};

void PrintLine(const char* line) { ShimPrint("%s", line); }
int StderrUsableForAgent() { return StderrUsable() ? 1 : 0; }

int DupKeptFileForAgent(const char* path) { return agent::DupKeptFile(path); }
int OpenHangFileOutOfReachForAgent(const char* path) {
  return OpenHangFileOutOfReach(path) ? 1 : 0;
}

const HangwatchPreloadServices kServices = {
    HANGWATCH_PRELOAD_ABI,
    0,
    PrintLine,
    StderrUsableForAgent,
    LaunchLogUnwritten,
    DupKeptFileForAgent,
    OpenHangFileOutOfReachForAgent,
    ShimSetting,
};
HangwatchPreloadServices g_services;  // kServices with `secure` filled in at the first load

// Where the agent library is: beside the loader, by the path the dynamic linker loaded the
// loader from (made absolute at load: a relative LD_PRELOAD entry would name another directory
// after a chdir). A loader found without a directory (a bare name) looks for the agent library
// as the dynamic linker would. "" when the path does not fit.
char g_agent_path[4096 + sizeof HANGWATCH_PRELOAD_AGENT_LIB];

// The agent library's entries, or NULL with one line in `why`.
const HangwatchPreloadAgent* LoadAgentLibrary(char* why, size_t why_size) {
  const char* path = g_agent_path;
  if (path[0] == '\0') {
    snprintf(why, why_size, "the path of %s is too long", HANGWATCH_PRELOAD_AGENT_LIB);
    return nullptr;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* error = dlerror();
    snprintf(why, why_size, "cannot load %s", error != nullptr ? error : path);
    return nullptr;
  }
  auto init =
      reinterpret_cast<HangwatchPreloadAgentInit>(dlsym(handle, HANGWATCH_PRELOAD_AGENT_INIT));
  const HangwatchPreloadAgent* agent = init != nullptr ? init(&g_services) : nullptr;
  if (agent == nullptr || agent->abi != HANGWATCH_PRELOAD_ABI || agent->prepare == nullptr ||
      agent->shim_files == nullptr || agent->arm == nullptr || agent->about_to_wait == nullptr ||
      agent->woke_up == nullptr || agent->watch_thread == nullptr ||
      agent->before_exit == nullptr || agent->stop_at_exit == nullptr ||
      agent->woke_up_from == nullptr) {
    snprintf(why, why_size, "%s is not from the same hangwatch as %s", path,
             ShimPath()[0] != '\0' ? ShimPath() : "libhangwatch_preload.so");
    return nullptr;
  }
  return agent;
}

void Prepare() {
  const int saved_errno = errno;
  // Waits made by the agent library's dependencies while they load (their constructors) pass
  // straight through, on the main thread too.
  const bool on_main = pthread_equal(pthread_self(), g_shim.main_thread) && Phase() == kUnarmed;
  if (on_main) SetPhase(kStarting);
  g_services = kServices;
  g_services.secure = g_shim.secure ? 1 : 0;
  // Descriptor 2 as it is now: the lines below, and the settings' warnings, may go there.
  DecideStderr(!g_shim.secure);
  char why[2 * 4096 + 256];  // two paths and a few words
  const HangwatchPreloadAgent* agent = LoadAgentLibrary(why, sizeof why);
  if (agent != nullptr) {
    agent->prepare();
    // Published once prepared: ShimFilesOfThisProcess() reads it without the once.
    __atomic_store_n(&g_prepared, agent, __ATOMIC_RELEASE);
    if (on_main) SetPhase(kUnarmed);
  } else {
    ShimPrint("hangwatch preload: not watching: %s", why);
    LaunchLogOff(why);
    SetPhase(kOff);
  }
  errno = saved_errno;
}

void StopAtExit() {
  if (Phase() == kArmed && getpid() == g_shim.armed_pid) g_shim.agent->stop_at_exit();
}

}  // namespace

void NoteAgentLibraryPath() {
  const char* self = ShimPath();
  const char* slash = strrchr(self, '/');
  const size_t dir_len = slash != nullptr ? static_cast<size_t>(slash - self) + 1 : 0;
  const size_t name_len = sizeof HANGWATCH_PRELOAD_AGENT_LIB - 1;
  size_t cwd_len = 0;
  g_agent_path[0] = '\0';
  if (dir_len > 0 && self[0] != '/') {
    if (getcwd(g_agent_path, sizeof g_agent_path) == nullptr) return;
    cwd_len = strlen(g_agent_path);
    g_agent_path[cwd_len++] = '/';
  }
  if (cwd_len + dir_len + name_len + 1 > sizeof g_agent_path) {
    g_agent_path[0] = '\0';
    return;
  }
  memcpy(g_agent_path + cwd_len, self, dir_len);
  memcpy(g_agent_path + cwd_len + dir_len, HANGWATCH_PRELOAD_AGENT_LIB, name_len + 1);
}

const HangwatchPreloadAgent* PrepareAgent() {
  SignalsHeld held;
  {
    LoadingMark loading;
    pthread_once(&g_prepare_once, Prepare);
  }
  return __atomic_load_n(&g_prepared, __ATOMIC_ACQUIRE);
}

bool ShimFilesOfThisProcess(ShimFiles* files) {
  const HangwatchPreloadAgent* agent = __atomic_load_n(&g_prepared, __ATOMIC_ACQUIRE);
  if (agent == nullptr || g_shim.secure || Phase() == kOff || InVforkChild()) return false;
  agent->shim_files(&files->report_path, &files->open_hang_dir);
  files->armed = Phase() == kArmed;
  return true;
}

ThreadWaits::Phase WatchThisThread() {
  ThreadWaits& t = t_thread_waits;
  const int saved_errno = errno;
  t.phase = ThreadWaits::kAsking;
  const int answer = g_shim.agent->watch_thread();
  if (answer == HANGWATCH_THREAD_LEFT_OUT || answer == HANGWATCH_THREAD_WATCHED) {
    char name[16] = {};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (answer == HANGWATCH_THREAD_WATCHED) {
      LaunchLogThreadWatched(name);
    } else {
      LaunchLogThreadLeftOut(name);
    }
  }
  t.phase = answer == HANGWATCH_THREAD_WATCHED ? ThreadWaits::kWatched : ThreadWaits::kNever;
  errno = saved_errno;
  return t.phase;
}

bool LoadingAgent() { return __atomic_load_n(&g_loading, __ATOMIC_ACQUIRE) != 0; }

void ArmWithSignalsHeld();

__attribute__((noinline)) bool ArmAtFirstWait() {
  const int saved_errno = errno;
  SignalsHeld held;
  {
    LoadingMark loading;
    ArmWithSignalsHeld();
  }
  const bool interrupted = held.HandledSignalPending();
  errno = saved_errno;
  return interrupted;
}

void ArmWithSignalsHeld() {
  const int saved_errno = errno;
  const uint64_t first_wait_ns = MonotonicNs();
  const HangwatchPreloadAgent* agent = PrepareAgent();
  if (agent == nullptr || Phase() != kUnarmed) {
    errno = saved_errno;
    return;
  }
  SetPhase(kStarting);  // waits made by Start() itself pass straight through
  // Descriptor 2 now, in this process: a daemon may have replaced it since the shim was loaded.
  DecideStderr(!g_shim.secure);
  HangwatchPreloadArmed armed{};
  agent->arm(g_shim.load_ns, first_wait_ns, &armed);
  if (armed.armed != 0) {
    __atomic_store_n(&g_shim.armed_pid, getpid(), __ATOMIC_RELAXED);
    g_shim.agent = agent;
    g_shim.about_to_wait = agent->about_to_wait;
    g_shim.woke_up = agent->woke_up;
    g_shim.woke_up_from = agent->woke_up_from;
    g_shim.inherit = armed.inherit != 0;
    // Release: a thread that reads it set (thread_waits.h) sees the entries above.
    __atomic_store_n(&g_shim.other_threads, armed.other_threads != 0 ? 1 : 0, __ATOMIC_RELEASE);
    static bool registered = false;  // survives fork: one handler per process image
    if (!registered) registered = atexit(StopAtExit) == 0;
    SetPhase(kArmed);
    g_shim.lineage_armed = true;
    if (!g_shim.inherit) StripShimFromOwnEnvironment();
    LaunchLogArmed();
  } else {
    armed.why[sizeof armed.why - 1] = '\0';
    ShimPrint("hangwatch preload: not watching: %s", armed.why);
    SetPhase(kOff);
    LaunchLogOff(armed.why);
  }
  errno = saved_errno;
}

}  // namespace hangwatch::preload
