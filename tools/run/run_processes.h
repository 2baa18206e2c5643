// The processes of a `hangwatch run` that outlive its command: the orphans `run` adopted as a
// child subreaper, and whether a process of the run may still reach its event loop (`run` gives
// those --startup-ms before its summary).
#ifndef HANGWATCH_TOOLS_RUN_RUN_PROCESSES_H_
#define HANGWATCH_TOOLS_RUN_RUN_PROCESSES_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

// The live children of this process (pid, start time). `run` is a child subreaper, so these are
// the command's descendants that outlived their parents (a daemon after its double fork, a
// background job of a shell that exited). Children that ended meanwhile are reaped first.
std::vector<std::pair<int64_t, uint64_t>> LingeringChildren();

// A process of the run is alive and may still arm: it loaded the shim and has neither armed,
// given up nor executed a program that runs without the shim (WhyNotLoaded() of the file, with
// `search_path` for a name without a slash), or it is a lingering child that has not logged
// anything yet (it may be about to: a fork child writes its line when it first runs), or a child
// of a live process of the run that has not logged anything yet and still runs its parent's
// program (a fork child that has not run yet; one that executed another program without a line
// runs without the shim).
bool WaitingToArm(const LaunchLog& log, const std::string& search_path);

// Waits until no process of the run that loaded the shim is alive, `grace` at most (polling
// /proc). A helper that its wrapper stops as it exits (Xvfb under xvfb-run: SIGTERM, then the
// wrapper's own exit) ends a moment after the command: it is not "still running".
void WaitForLastProcesses(const LaunchLog& log, std::chrono::milliseconds grace);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_RUN_PROCESSES_H_
