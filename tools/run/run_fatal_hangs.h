// The hangs that killed processes of a run: read back from the open-hang files of a run
// directory (hang/open_hang/open_hang_file.h), named offline, and appended to the report as the
// shim writes its hangs.
#ifndef HANGWATCH_TOOLS_RUN_RUN_FATAL_HANGS_H_
#define HANGWATCH_TOOLS_RUN_RUN_FATAL_HANGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hangwatch/hang_record.h"

namespace hangwatch::tools {

// The hangs that were open when processes died, from the open-hang files in `dir` (each file is
// removed once read, so that no one reports it twice). Files of processes for which `live`
// holds are left alone: they hold a hang in progress, not a fatal one.
std::vector<HangRecord> TakeFatalHangs(const std::string& dir,
                                       const std::function<bool(int64_t)>& live);

// A hang left open by a process that `run` saw end with `wait_status` (waitpid's): when the process
// exited (it was not killed by a signal), the hang did not kill it. The process ended its own pass
// by exiting without the exit hooks the shim sees (Go's os.Exit and any raw exit_group system
// call), as a pass that exit() ends: a shutdown-phase hang (HangPhase::kShutdown, not fatal),
// judged as those are. True when the hang was changed so; a process killed by a signal keeps its
// fatal hang.
bool EndedByExit(HangRecord* hang, int wait_status);

// Appends one hang to a JSON Lines report (one whole line, never through a symbolic link,
// rotated at the agent's size). 0, or the errno of the failure.
int AppendToReport(const std::string& path, const HangRecord& hang);

// For a run directory of an earlier run whose processes are all gone: its fatal hangs are
// printed, and appended to that run's report when it had one.
void ReportFatalHangsOfEarlierRun(const std::string& dir, const std::string& report);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_RUN_FATAL_HANGS_H_
