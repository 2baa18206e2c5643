// What the exec interposers (preload_exec.cc) need to know of the shim's life cycle
// (preload_shim.cc). Internal to libhangwatch_preload.so.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_

#include <stddef.h>

namespace hangwatch::preload {

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
// none), and whether the agent is armed here. False when the shim writes nothing in this
// process (secure execution, not loaded on the main thread) or when the caller is not a process
// the shim knows: a vfork child (it shares its parent's memory, and executes next).
struct ShimFiles {
  const char* report_path = "";
  const char* open_hang_dir = "";
  bool armed = false;
};
bool ShimFilesOfThisProcess(ShimFiles* files);

// `dir`/open-hang.`pid` into out (cap bytes, NUL-terminated): this process's open-hang file.
// False when it does not fit. Allocation-free.
bool FormatOpenHangPath(const char* dir, long pid, char* out, size_t cap);

// Resolves the real calls that change user (dlsym(RTLD_NEXT)). Called once by the shim's
// constructor, like ResolveExecCalls().
void ResolveUserChangeCalls();

// In a forked child (pthread_atfork handler): forgets the files its parent kept for itself
// alone before changing user (its open-hang file). System calls only.
void ForgetParentsKeptFiles();

// True when this process (or the one it was forked from) changed user, no open-hang file was
// kept for `path` before, and the new user cannot create it by name (a worker forked after its
// parent dropped root, in a 0700 directory of the user who started the watch). Such a process
// is watched without an open-hang file.
bool OpenHangFileOutOfReach(const char* path);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
