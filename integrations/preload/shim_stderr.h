// The preload shim's stderr: the settings' warnings, the "start-up stall" and "not watching"
// lines, and the agent's live hang report (agent_stderr_logger.h, in the agent library, through
// the loader's services: agent_entry.h) go through here, and only to a descriptor 2 that
// stderr_policy.h allows. The decision is made when the agent library is loaded and again when
// the process arms (a daemon may have replaced its descriptors in between; a forked child arms
// on its own); each line then checks that descriptor 2 is still the file that was allowed, so a
// program that reopens 2 later does not get our lines in its file either. Internal to
// libhangwatch_preload.so (libc only).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STDERR_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STDERR_H_

namespace hangwatch::preload {

// Looks at descriptor 2 now. `allowed` false (a set-user-ID process): nothing is ever printed.
void DecideStderr(bool allowed);
// Descriptor 2 is the file allowed at the last decision.
bool StderrUsable();
// One line (printf format, no newline needed) when StderrUsable().
void ShimPrint(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_SHIM_STDERR_H_
