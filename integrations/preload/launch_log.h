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
//   EVENT      load | exec | armed | off | unwritten
//   STARTTIME  field 22 of /proc/PID/stat (clock ticks since boot): with PID it names the
//              process even after the pid is reused
//   NAME       the process name (basename of argv[0], else comm); no tabs or newlines
//   DETAIL     load: the executable (/proc/self/exe); exec: the path being executed;
//              armed: empty; off: why the agent could not start; unwritten: "TYPE ERRNO", a
//              record (TYPE: hang, lag, startup_stall) the report file did not take (a full
//              disk), so that `run` counts it instead of saying "no hangs"
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
// This process is about to execute `path` (before the real exec call; a failed exec leaves a
// line too, which is harmless: the process keeps running and logs again).
void LaunchLogExec(const char* path);
// The agent started in this process (its main thread reached an event loop).
void LaunchLogArmed();
// The agent could not start; `why` is Start()'s message.
void LaunchLogOff(const char* why);
// A record of `type` could not be written to the report (errno `error_number`).
void LaunchLogUnwritten(const char* type, int error_number);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_LAUNCH_LOG_H_
