// The launch log: what each process that loaded the shim did, so that `hangwatch run` can say
// which processes it watched and, when none reached an event loop, why ("python3 never waited
// for events; it executed /usr/bin/true").
//
// The file is named by HANGWATCH_LAUNCH_LOG (set by `hangwatch run`; unset: nothing is written).
// Every event is one line appended with a single write(2) on an O_APPEND descriptor, so lines of
// concurrent processes never interleave:
//
//   EVENT PID PPID STARTTIME NAME\tDETAIL\n
//
//   EVENT      load | exec | spawn | execfail | armed | off | unwritten | join | leftout |
//              watch | loop
//   STARTTIME  field 22 of /proc/PID/stat (clock ticks since boot): with PID it names the
//              process even after the pid is reused
//   NAME       the process name, at most 255 bytes, no tabs or newlines: the basename of
//              argv[0] as it was when the shim was loaded (copied then: a program may rewrite
//              its argv, as nginx does with its titles), unless the program has renamed itself
//              since (prctl(PR_SET_NAME), /proc/self/comm: node sets `npm`), then
//              /proc/self/comm; a forked child starts with its parent's
//   DETAIL     load: the executable (/proc/self/exe);
//              exec, spawn: SHIM\tPATH\tARGV, an exec-family call (the program replaces this
//              process) or posix_spawn (it runs in a new one), written before the call:
//                SHIM  what the new program's environment holds of the shim: `kept`;
//                      `stripped` (the launch rule took it out: this process or the one it
//                      was forked from armed, without HANGWATCH_INHERIT=1); `absent` (the
//                      program built an environment without it: env -i, a cleared env)
//                PATH  as given to the call (no slash: looked up in PATH);
//                      "(a file descriptor)" for fexecve
//                ARGV  the arguments, joined by spaces, tabs and newlines as spaces, at most
//                      1024 bytes (cut short: "..." at the end)
//              execfail: the errno of the exec or spawn call just logged, which returned
//              (the program did not run; for an exec the same image goes on);
//              armed: empty; off: why the agent could not start; unwritten: "TYPE ERRNO", a
//              record (TYPE: hang, lag, startup_stall) the report file did not take (a full
//              disk), so that `run` counts it instead of saying "no hangs"
//              join: the main thread called pthread_join before it waited for events (once
//              per process: a runtime that runs the program on another thread, the JVM):
//              empty, or `arm` when the process armed there (HANGWATCH_THREADS selects other
//              threads, main_thread_join.cc; its `armed` line follows): then it watches what
//              the `watch` and `loop` lines say, and nothing when there are none
//              watch: the name of a thread besides the main one the agent watches from now on
//              loop: empty; after a `join arm`, the main thread woke up in an event loop of
//              its own (once)
//              leftout: the name of a loop thread HANGWATCH_THREADS selected and the agent
//              could not watch (every slot of Config::max_watched_threads taken): one line per
//              such thread, so that `run` says how many were left out
//
// The format is internal to one version of the shim and `hangwatch run` (the run directory
// and its log belong to one run).
//
// The writers are libc-only and allocation-free (a stack buffer), so they may run in a vfork
// child or right before execve. The reader lives with `hangwatch run` (tools/).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_LAUNCH_LOG_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_LAUNCH_LOG_H_

namespace hangwatch::preload {

// Reads HANGWATCH_LAUNCH_LOG once (call from the shim's constructor); later calls are no-ops
// when it is unset.
void LaunchLogInit();
// Opens the log and keeps the descriptor (close-on-exec), for the events written after this
// process changes user and can no longer open the log by name (privilege_drop.cc).
void LaunchLogKeep();
// The shim was loaded into this process (constructor) or this process was forked (child).
void LaunchLogLoaded();
// What a program being executed gets of the shim (the SHIM field above).
enum class ExecShim { kKept, kStripped, kAbsent };
// This process is about to execute `path` with `argv` (null: none known): an exec-family call
// (`spawn` false) or posix_spawn (`spawn` true). Written before the real call; when the call
// returns, LaunchLogExecFailed() says so.
void LaunchLogExec(const char* path, char* const argv[], ExecShim shim, bool spawn);
// The exec or spawn call just logged returned `error_number` (the program did not run).
void LaunchLogExecFailed(int error_number);
// The agent started in this process (its main thread reached an event loop).
void LaunchLogArmed();
// The agent could not start; `why` is Start()'s message.
void LaunchLogOff(const char* why);
// The main thread, not armed yet, waits for another thread to end (pthread_join); `armed`: the
// process arms there.
void LaunchLogMainJoined(bool armed = false);
// A thread besides the main one, named `thread_name`, is watched from now on.
void LaunchLogThreadWatched(const char* thread_name);
// After arming at a join, the main thread woke up in an event loop of its own.
void LaunchLogMainLoop();
// A loop thread named `thread_name`, selected by HANGWATCH_THREADS, was left out (no slot).
void LaunchLogThreadLeftOut(const char* thread_name);
// A record of `type` could not be written to the report (errno `error_number`).
void LaunchLogUnwritten(const char* type, int error_number);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_LAUNCH_LOG_H_
