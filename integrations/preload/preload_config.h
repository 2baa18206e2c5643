// The LD_PRELOAD shim's settings, read from HANGWATCH_* environment variables (a stable
// contract: docs/architecture.md, Contracts), by the agent library when the process arms. Pure
// functions on strings, so they are tested without preloading anything. (The LD_PRELOAD
// rewriting that keeps the shim out of child processes, used by the loader, is in
// preload_list.h.)
//
//   HANGWATCH_THRESHOLD_MS   a run-loop pass longer than this is a hang (default 250)
//   HANGWATCH_SAMPLE_MS      sample interval while a pass is slow (default threshold / 10)
//   HANGWATCH_REPORT         JSON Lines file (docs/report-format.md); default: none
//   HANGWATCH_LOG            0: no live report on stderr (default 1; printed only when stderr is
//                            a terminal, a pipe or a handed-over stream: stderr_policy.h)
//   HANGWATCH_LOG_LAG        1: with the live report, a line per lag record too (default 0)
//   HANGWATCH_STARTUP_STALL  0: do not report a slow start-up (default 1)
//   HANGWATCH_STARTUP_MS     start-up longer than this is a start-up stall (default 2000)
//   HANGWATCH_INHERIT        1: children keep LD_PRELOAD and the HANGWATCH_* settings
//   HANGWATCH_LAG_INTERVAL_MS  a {"type":"lag"} record of every pass's duration this often
//                            (default 60000; 0: only at exit).
//   HANGWATCH_TIME_PASSES    0: do not time every pass (no lag records; saves two clock reads
//                            per wait)
//   HANGWATCH_LABELS         "k=v,k=v" written on every record (read by the agent)
//   HANGWATCH_OPEN_HANG_DIR  where the open-hang file of each process (open-hang.PID) lives, so
//                            a hang that kills the process is reported as fatal; default: none
//   HANGWATCH_THREADS        main (default), loops, or thread-name patterns: the threads watched
//                            besides the main one (thread_selection.h); malformed: main only
// Two more, set by `hangwatch run` and read where they are used:
//   HANGWATCH_LAUNCH_LOG     the launch log's path (launch_log.h)
//   HANGWATCH_STDERR         "DEV:INO" of a stderr the shim may print on (stderr_policy.h)
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_CONFIG_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "integrations/preload/preload_list.h"
#include "integrations/preload/thread_selection.h"

namespace hangwatch::preload {

struct PreloadConfig {
  uint32_t threshold_ms = 250;
  uint32_t sample_ms = 0;   // 0: the agent's default (threshold / 10)
  uint32_t max_frames = 0;  // 0: the agent's default (Config::max_frames)
  std::string report_path;
  bool log = true;
  bool log_lag = false;
  bool startup_stall = true;
  uint32_t startup_ms = 2000;
  bool inherit = false;
  std::string open_hang_dir;
  uint32_t lag_interval_ms = 60'000;  // 0: one lag record, at exit
  bool time_passes = true;
  ThreadSelection threads;  // main only by default
};

// Looks up one variable; nullptr when unset. The shim passes secure_getenv, which returns
// nullptr for every variable in a setuid / setgid process, so such a process runs with the
// defaults.
using EnvLookup = std::function<const char*(const char*)>;

// Reads the settings. A malformed value keeps the default and adds one line to *warnings.
PreloadConfig ReadPreloadConfig(const EnvLookup& getenv, std::vector<std::string>* warnings);

// The settings of a secure-execution process (AT_SECURE: set-user-ID, set-group-ID, or gaining
// capabilities), whose environment is its caller's, not its own: the defaults, and nothing
// printed or written (a report, an open-hang file, a stack with its addresses on the caller's
// terminal would hand the caller what belongs to the privileged process). There is no
// system-wide configuration to enable them.
PreloadConfig SecureExecutionConfig();

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_CONFIG_H_
