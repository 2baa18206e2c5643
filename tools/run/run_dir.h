// The temporary run directory of `hangwatch run` (/tmp/hangwatch-run.XXXXXX): the open-hang
// files of the watched processes, the launch log, the report when no --report was given, and
// run.pid, which names the `run` that owns it ("PID STARTTIME\n"). A directory outlives its
// `run` while a watched process (a daemon) still uses it; the next `run` removes the ones whose
// owner and processes are all gone.
#ifndef HANGWATCH_TOOLS_RUN_DIR_H_
#define HANGWATCH_TOOLS_RUN_DIR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

inline constexpr char kRunDirPrefix[] = "hangwatch-run.";
inline constexpr char kRunOwnerFile[] = "run.pid";
inline constexpr char kLaunchLogFile[] = "launch.log";

// Creates PARENT/hangwatch-run.XXXXXX (mode 0700) with its run.pid naming this process and
// `report`, the JSON Lines file its processes write to ("" when that lives in the directory
// itself): a later clean-up adds there the hangs that killed a process after this run ended.
// False with *error when it cannot.
bool CreateRunDir(const std::string& parent, const std::string& report, std::string* path,
                  std::string* error);

// The pids of the processes whose open-hang file in `dir` is locked, i.e. in use by a live
// process (the agent holds an exclusive flock() on it while it runs). Read from /proc/locks:
// no lock is taken, so an agent creating its file meanwhile is never refused.
std::vector<int64_t> LockedOpenHangFiles(const std::string& dir);

// The processes of `log` that are still alive.
std::vector<const LaunchProcess*> LiveProcesses(const LaunchLog& log);

// A run directory is in use while its owner `run`, a process of its launch log, or the holder
// of one of its open-hang files lives. A directory without run.pid is in use (it may be being
// created, or belong to another tool).
bool RunDirInUse(const std::string& dir);

// Removes the directories PARENT/hangwatch-run.* that belong to this user and are no longer in
// use. `before_removal`, when set, is called for each with the directory and the report named
// in its run.pid (maybe ""), while the directory is claimed (a concurrent clean-up skips it).
// Returns the paths removed.
std::vector<std::string> RemoveStaleRunDirs(
    const std::string& parent,
    const std::function<void(const std::string& dir, const std::string& report)>& before_removal =
        {});

// Removes `dir` and the files in it (the shim writes no subdirectories).
void RemoveRunDir(const std::string& dir);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_DIR_H_
