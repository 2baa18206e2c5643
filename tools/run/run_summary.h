// What `hangwatch run` tells when its command has ended: the processes it watched (from the
// launch log and the report), how the command ended, and the JUnit file of a run that watched
// nothing.
#ifndef HANGWATCH_TOOLS_RUN_SUMMARY_H_
#define HANGWATCH_TOOLS_RUN_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/reader/hang_rate.h"
#include "tools/reader/report_reader.h"
#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

struct WatchedProcess {
  int64_t pid = 0;
  uint64_t start_time = 0;  // 0: unknown (the process is known from the report only)
  std::string name;         // process name
  std::string exe;          // executable; may be empty
  size_t hangs = 0;         // hang records with its pid in this run's report
  size_t startup_stalls = 0;
  size_t unwritten_hangs = 0;   // hangs and start-up stalls its report file did not take
  size_t threads_left_out = 0;  // loop threads selected by --threads but not watched (no slot)
  bool armed_at_join = false;   // its main thread waited in pthread_join (the JVM's launcher)
  bool running = false;         // still alive when the summary was made
  bool helper = false;          // a wrapper's helper, not the program or a process it started
  size_t lag_records = 0;       // its main thread's lag records in this run's report, and
  PassHistogram passes;         // their passes:
  HangRate hang_rate;           // its main thread's hangs against the time those lag records cover
  // The main thread's queued + running (report::DelayOf of each record) and its passes that had
  // a known wait: a line of its own when some had.
  PassHistogram delay;
  uint64_t queued_passes = 0;
  // The same for each other watched thread role (hangwatch/threads.h), never added to main's.
  struct RoleLag {
    size_t lag_records = 0;
    PassHistogram passes;
    HangRate hang_rate;
  };
  std::map<std::string, RoleLag> other_roles;
};

// Every process that armed (launch log), plus every pid that has records in `report` but no
// armed line (a shim that does not write a launch log), in order of appearance.
std::vector<WatchedProcess> WatchedProcesses(const LaunchLog& log, const Report& report);

// "  pid 1234 redis-server (/usr/bin/redis-check-rdb): 2 hangs, still running\n" per process
// (", a helper, not the program" after a helper's hangs),
// each line prefixed with "hangwatch run: ", and for a process with lag records a second line,
// "    lag: 3611 passes (busy 9.8 s), p50 ...; hang rate 12.3 s/h (...)", then one line
// "    lag of thread ROLE: ..." per other thread role with lag records, and "    N loop threads
// not watched: ..." when --threads selected more than the agent's slots.
std::string FormatWatched(const std::vector<WatchedProcess>& watched);

// One line per kind of record lost and cause, each prefixed with "hangwatch run: ": "2 hangs
// could not be written to PATH: No space left on device\n". Empty when nothing was lost.
std::string FormatUnwritten(const std::vector<UnwrittenRecords>& unwritten,
                            const std::string& report_path);

// "exited with status 3", "was killed by signal 9 (SIGKILL)", from a waitpid status.
std::string DescribeWaitStatus(int status);

// A JUnit file (tests/tools/junit.xsd) with one test case in error: the run could not gate
// (`type` "not-watched": no process reached an event loop; "not-executed": the command could
// not be started).
std::string FormatJunitError(const std::string& suite, const std::string& type,
                             const std::string& message, double elapsed_s);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_SUMMARY_H_
