// The loader's state and the hooks its files share: preload_shim.cc (load, fork, the wait and
// exit interposers), preload_exec.cc (the exec family), agent_loader.cc (loading the agent
// library and arming), privilege_drop.cc (the calls that change user), runtime_waits.cc and the
// wait wrappers (wait_wrapper.h). Internal to libhangwatch_preload.so, which is libc only:
// nothing here may need the C++ runtime (no exceptions, no RTTI, no allocation through operator
// new, no std::string).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "integrations/preload/agent_entry.h"

namespace hangwatch::preload {

// Where the main thread is in its life cycle (ShimState::phase).
enum ShimPhase : int {
  kUnarmed,   // loaded, not waited for events yet: the first blocking wait arms
  kStarting,  // arming (or loading the agent library) now: waits pass straight through
  kArmed,     // the agent watches the main thread
  kOff,       // never arms: not the main thread known, the agent could not load or start
};

struct ShimState {
  pthread_t main_thread{};
  // Written by the constructor, the main thread and the fork child handler (each the only
  // thread that may touch it at that moment), and set to kOff by a failed PrepareAgent() on
  // any thread: read and written with relaxed atomics.
  int phase = kOff;
  // The agent library's entries; set before phase becomes kArmed, never cleared. The two the
  // main thread calls around every wait are copied out (one load less on that path).
  const HangwatchPreloadAgent* agent = nullptr;
  void (*about_to_wait)() = nullptr;
  void (*woke_up)() = nullptr;
  void (*woke_up_from)(uint64_t trigger, uint64_t data, uint64_t events) = nullptr;
  // HANGWATCH_THREADS is not `main` (the agent library said so when arming): the waits of other
  // threads are followed (thread_waits.h). Set (release, after the entries above) before phase
  // becomes kArmed; read with acquire.
  int other_threads = 0;
  bool secure = false;  // AT_SECURE: nothing printed, nothing written
  // Armed at the main thread's pthread_join (main_thread_join.cc), and the main thread has not
  // woken up in a loop of its own since: its first such wake-up is written to the launch log
  // (LaunchLogMainLoop). Main thread only.
  bool main_loop_unseen = false;
  bool lineage_armed = false;  // this process, or one it was forked from, armed
  bool inherit = false;        // HANGWATCH_INHERIT=1, as the agent library read it when arming
  pid_t armed_pid = 0;
  // This process's pid as the constructor or the fork handler saw it. A vfork child shares this
  // memory and runs no fork handler: there getpid() differs (InVforkChild).
  pid_t pid = 0;
  uint64_t load_ns = 0;  // CLOCK_MONOTONIC when loaded (or forked)
};
extern ShimState g_shim;

// In a vfork child (or a child cloned without fork handlers): only async-signal-safe calls, no
// dlopen, nothing that writes the parent's state.
inline bool InVforkChild() { return getpid() != g_shim.pid; }

inline uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline int Phase() { return __atomic_load_n(&g_shim.phase, __ATOMIC_RELAXED); }
inline void SetPhase(int phase) { __atomic_store_n(&g_shim.phase, phase, __ATOMIC_RELAXED); }

// Notes where the agent library is, beside the loader (ShimPath()). Called once by the
// constructor, before anything can change the working directory.
void NoteAgentLibraryPath();

// The main thread reached its event loop: PrepareAgent(), then the agent library's arm().
// Leaves the phase kArmed or kOff; errno preserved. Main thread only, phase kUnarmed. Signals
// are held meanwhile (agent_loader.cc says why); true when one the program handles arrived and
// was delivered as they were released: the wait that armed must then return EINTR, as it
// would have had the signal come during it.
bool ArmAtFirstWait();

// The main thread, armed at its pthread_join, waits in a loop of its own: says so once
// (main_loop_unseen). Out of line: the wait wrappers' unlikely branch.
void NoteMainLoopAfterJoin();

// Loads the agent library (dlopen, from the loader's own directory) and has it read the
// HANGWATCH_* settings, once per process image: later calls return the first result. For
// interposers that must get the agent ready before the program changes what it may reach
// (setuid and friends), and for arming. NULL when the library cannot be loaded: then the
// process never arms, and one "hangwatch preload: not watching: ..." line and the launch log's
// `off` event said why. Not in a vfork child or a signal handler (dlopen). Any thread, but the
// main thread's first wait waits for a load another thread started: call it from the thread
// about to change what the process may reach (as setuid() and friends are), not ahead of time.
const HangwatchPreloadAgent* PrepareAgent();

// True while a thread of this process loads the agent library or starts the agent. The fork
// child handler reads it: a child forked at that moment (by another thread, or by a signal
// handler in the middle of the load) has a copy of a half-done dlopen() and stays off.
bool LoadingAgent();

// True when programs this process executes keep the shim in LD_PRELOAD: neither this process
// nor the one it was forked from has armed, or HANGWATCH_INHERIT=1. A process that has not
// reached an event loop yet (a shell, env, timeout, nice, a wrapper script) passes the shim on.
bool ExecKeepsShim();

// The shim's own path as the dynamic linker loaded it; "" when unknown.
const char* ShimPath();

// Resolves the real exec calls (dlsym(RTLD_NEXT)). Called once by the shim's constructor: an
// exec may run in a vfork child, where dlsym (locks, allocation) must not.
void ResolveExecCalls();

// Removes the shim from this process's own LD_PRELOAD (in place), so that what glibc executes
// by itself (system, popen) runs without it. Called when the process arms, unless
// HANGWATCH_INHERIT=1.
void StripShimFromOwnEnvironment();

// What the shim writes in this process, for the interposers of the calls that change user
// (privilege_drop.cc): the report's path and the directory of the open-hang files ("" for
// none), as the agent library read them (PrepareAgent() first: this call never loads it), and
// whether the agent is armed here. False when the shim writes nothing in this process (secure
// execution, not loaded on the main thread, the agent library not prepared or not loadable) or
// when the caller is not a process the shim knows: a vfork child (it shares its parent's
// memory, and executes next).
struct ShimFiles {
  const char* report_path = "";
  const char* open_hang_dir = "";
  bool armed = false;
};
bool ShimFilesOfThisProcess(ShimFiles* files);

// Resolves the real calls that change user (dlsym(RTLD_NEXT)). Called once by the shim's
// constructor, like ResolveExecCalls().
void ResolveUserChangeCalls();

// In a forked child (pthread_atfork handler): forgets the files its parent kept for itself
// alone before changing user (its open-hang file). System calls only.
void ForgetParentsKeptFiles();

// True when this process (or the one it was forked from) changed user, no open-hang file was
// kept for `path` before, and the new user cannot create it by name (a worker forked after its
// parent dropped root, in a 0700 directory of the user who started the watch). Such a process
// is watched without an open-hang file. The agent library asks when it arms (a service of
// agent_entry.h).
bool OpenHangFileOutOfReach(const char* path);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
