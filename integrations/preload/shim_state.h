// What the exec interposers (preload_exec.cc) need to know of the shim's life cycle
// (preload_shim.cc). Internal to libhangwatch_preload.so.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_

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

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STATE_H_
