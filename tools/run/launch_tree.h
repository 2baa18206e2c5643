// What the launch log says about the programs a run started, beyond the processes it watched:
// the programs that ran without the shim (named in `run`'s summary), and the launch tree that
// `hangwatch run --explain` prints (every process that loaded the shim, under its parent, what
// it executed, whether it armed and why not).
#ifndef HANGWATCH_TOOLS_RUN_LAUNCH_TREE_H_
#define HANGWATCH_TOOLS_RUN_LAUNCH_TREE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

// The index of the process that started processes[child]: the newest process with its parent's
// pid that started no later than it did (pids are reused), or -1.
int ParentIndex(const LaunchLog& log, size_t child);

// Programs that ran without the shim: executed (or spawned) with an environment that did not
// hold it, by the launch rule (--no-inherit) or because the caller built one without it. The
// same caller, arguments and cause are one entry, counted.
struct UnwatchedExec {
  std::string by;    // the calling process's name
  std::string argv;  // what it executed (the path when there were no arguments)
  ExecShim shim = ExecShim::kStripped;
  size_t count = 0;
};
std::vector<UnwatchedExec> UnwatchedExecs(const LaunchLog& log);

// One line each, prefixed with "hangwatch run: ": "npm executed `sh -c node server.js` without
// hangwatch; it was not watched (the launch rule: --no-inherit)"; at most `max_lines`, then one
// line for the rest. Not escaped (the caller escapes what it prints).
std::string FormatUnwatchedExecs(const std::vector<UnwatchedExec>& execs, size_t max_lines);

// The launch tree (docs/run.md, "Why was my process not watched?"), each line prefixed with
// "hangwatch run: ":
//
//   launch tree (every process that loaded the shim, under its parent):
//     pid 100 sh (/usr/bin/dash): executed `npm start`
//       then env (/usr/bin/env): executed `node /usr/bin/npm start`
//       then npm (/usr/bin/node): watched
//       pid 101 npm (/usr/bin/node): executed `sh -c node server.js` without the shim (the
//       launch rule: --no-inherit): not watched
//
// One line per program image: the pid (first image) or "then" (a later image of the same
// process, after an exec that loaded the shim again), its name and executable, and what it did:
// "watched"; "could not be watched: REASON" (the agent's own reason: dropped privileges, a
// report it could not open, ...); each program it executed or started, and when that program
// was not watched, why (the launch rule, an environment cleared of the shim, a statically
// linked or set-user-ID file); "never waited for events" (or "not waiting for events yet" while
// it runs). `root_pid` and `command`: the process `run` started, named first when it did not
// load the shim. Not escaped.
std::string FormatLaunchTree(const LaunchLog& log, int64_t root_pid, const std::string& command,
                             const std::string& search_path);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_LAUNCH_TREE_H_
