// Reading the launch log that the preload shim writes under `hangwatch run`
// (integrations/preload/launch_log.h defines the format): which processes loaded the shim, what
// they executed, which of them armed the agent, and which are still alive. `hangwatch run` uses
// it to list the processes it watched, to say why none was watched, and to keep its run
// directory while a watched daemon still lives.
#ifndef HANGWATCH_TOOLS_LAUNCH_LOG_READER_H_
#define HANGWATCH_TOOLS_LAUNCH_LOG_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::tools {

// What a program being executed got of the shim (launch_log.h's SHIM field).
enum class ExecShim { kKept, kStripped, kAbsent };

// One exec-family or posix_spawn call.
struct LaunchExec {
  std::string name;  // the calling process's name at the call
  std::string path;  // as given to the call (no slash: looked up in PATH)
  std::string argv;  // the arguments joined by spaces (cut short: "..." at the end)
  ExecShim shim = ExecShim::kKept;
  bool spawn = false;   // posix_spawn: the program runs in a new process, this one goes on
  bool failed = false;  // the call returned: the program did not run
};

// One program image in one process: from its load (or the first line seen) until an exec that
// loaded the shim again.
struct LaunchImage {
  std::string name;               // the newest name a line of this image gave (launch_log.h)
  std::string exe;                // the executable (load line); empty when no load was seen
  bool loaded = false;            // a load line was seen
  std::vector<LaunchExec> execs;  // exec and spawn calls made from this image, in order
  bool armed = false;             // the agent started (the main thread waited for events)
  bool off = false;               // the agent could not start
  std::string off_reason;
  // The main thread, not armed yet, waited for another thread to end (pthread_join): the
  // program ran on other threads (the JVM runs main() on a thread it starts).
  bool main_joined = false;
  // It armed at that join (--threads other than main): watched are only the threads it named
  // as watched and, if it woke up in a loop of its own, the main thread. When neither, `armed`
  // is false (nothing was watched) and `joined_without_loops` is set.
  bool armed_at_join = false;
  size_t threads_watched = 0;  // threads besides the main one it watched
  bool main_loop = false;
  bool joined_without_loops = false;

  // The last exec-family call that did not fail, or null.
  const LaunchExec* LastExec() const;
};

// One process: a pid and its start time (clock ticks since boot, field 22 of /proc/PID/stat),
// which together name it even after the pid is reused.
struct LaunchProcess {
  int64_t pid = 0;
  int64_t ppid = 0;        // the newest parent (a daemon is re-parented)
  int64_t parent_pid = 0;  // the parent when its first line was written
  uint64_t start_time = 0;
  size_t unwritten_hangs = 0;  // hangs and start-up stalls its report file did not take
  // Loop threads HANGWATCH_THREADS selected that the agent could not watch (every slot taken).
  size_t threads_left_out = 0;
  std::vector<LaunchImage> images;  // never empty
  bool ended_in_exec = false;       // its last line is an exec that did not fail

  // The image that armed (the last one if several did), or null.
  const LaunchImage* ArmedImage() const;
  const LaunchImage& Last() const { return images.back(); }
  // The exec that replaced the last image by a program that did not load the shim (its last
  // line is that exec), or null.
  const LaunchExec* Became() const;
  // Its newest name: the last image's, or, after an exec to a program without the shim, the
  // kernel's name of the process now when it still runs (/proc/PID/comm), else the executed
  // file's name.
  std::string NewestName() const;
};

// Records a report file did not take (unwritten lines), by type and cause.
struct UnwrittenRecords {
  std::string type;  // hang, startup_stall, lag (the report format's names)
  int error_number = 0;
  size_t count = 0;
};

struct LaunchLog {
  std::vector<LaunchProcess> processes;  // in order of their first line
  size_t skipped_lines = 0;              // malformed lines (ignored)
  std::vector<UnwrittenRecords> unwritten;

  // Counts one record of `type` lost to `error_number`.
  void AddUnwritten(const std::string& type, int error_number);
  // Hangs and start-up stalls among the unwritten records.
  size_t UnwrittenHangs() const;

  const LaunchProcess* Find(int64_t pid) const;  // the newest process with that pid, or null
  bool AnyArmed() const;
};

// Parses the text of a launch log. Malformed lines are counted and skipped; a torn last line
// (no newline) is ignored.
LaunchLog ParseLaunchLog(std::string_view text);
// Reads and parses the file (a missing file is an empty log).
LaunchLog ReadLaunchLog(const std::string& path);

// What /proc says about a process.
struct ProcStat {
  bool exists = false;
  char state = '?';  // field 3 (R, S, D, Z, ...)
  int64_t ppid = 0;  // field 4
  uint64_t start_time = 0;
};
ProcStat ReadProcStat(int64_t pid);
// Parses the text of /proc/PID/stat (the name may hold spaces and parentheses).
ProcStat ParseProcStat(std::string_view text);

// The process `pid` that started at `start_time` is still running (not a zombie).
bool IsAlive(int64_t pid, uint64_t start_time);

// Why `path` (a program that was executed) could not have loaded the shim, as a parenthesized
// clause starting with a space (" (a statically linked program: ...)"), or "" when nothing
// about the file explains it. A path without a slash is looked up in `search_path` (a PATH
// value).
std::string WhyNotLoaded(const std::string& path, const std::string& search_path);

// Why the program `exec` ran was not watched, as a clause that follows "it executed PATH":
// " without the shim (the launch rule: --no-inherit)", " with its environment cleared (...)",
// or ", which did not load the shim" and WhyNotLoaded()'s clause.
std::string WhyExecNotWatched(const LaunchExec& exec, const std::string& search_path);

// The one line `hangwatch run` prints when no process armed, after "no process was watched: ".
// `log`: the run's launch log; `root_pid`: the process `run` started; `command`: its argv[0].
std::string ExplainNothingWatched(const LaunchLog& log, int64_t root_pid,
                                  const std::string& command, const std::string& search_path);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_LAUNCH_LOG_READER_H_
