// The C interface between the preload shim's two libraries. libhangwatch_preload.so (the
// loader: libc only, loaded into every process) dlopen()s libhangwatch_preload_agent.so (the
// agent and everything heavy) when the main thread first waits for events, and the two talk
// only through the two tables below: the loader hands the agent library the services it keeps
// (stderr, the launch log, the descriptors kept before the program changed user), the agent
// library hands back its entries. Plain C types: the
// loader has no C++ runtime.
//
// The two files come from one build; `abi` catches a loader and an agent library from
// different versions (an installation half-upgraded): each refuses the other's table, and the
// loader says so ("not watching: ...") instead of calling into a layout it does not know.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_ENTRY_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_ENTRY_H_

#include <stddef.h>
#include <stdint.h>

extern "C" {

// Bumped whenever a table below changes.
#define HANGWATCH_PRELOAD_ABI 5
// The agent library's one exported symbol: HangwatchPreloadAgentInit.
#define HANGWATCH_PRELOAD_AGENT_INIT "hangwatch_preload_agent_init"
// The agent library's file name; the loader looks for it in its own directory.
#define HANGWATCH_PRELOAD_AGENT_LIB "libhangwatch_preload_agent.so"

// Loader -> agent library. Every function may be called from any thread.
struct HangwatchPreloadServices {
  uint32_t abi;
  // Secure execution (AT_SECURE): the settings are the defaults, nothing is printed or written.
  int secure;
  // One line (no newline) on stderr, when descriptor 2 is one the shim may print on
  // (shim_stderr.h).
  void (*print_line)(const char* line);
  // Descriptor 2 is still the file the shim decided it may print on.
  int (*stderr_usable)(void);
  // A record the report file did not take (launch_log.h, "unwritten").
  void (*launch_log_unwritten)(const char* type, int error_number);
  // agent::DupKeptFile() of the loader's table (hang/files/kept_files.h): the loader keeps the
  // descriptors before the program changes user (privilege_drop.cc), the agent library's
  // writers use them. A new close-on-exec descriptor, or -1. System calls only.
  int (*dup_kept_file)(const char* path);
  // OpenHangFileOutOfReach() (shim_state.h): nonzero when this process changed user and cannot
  // create its open-hang file `path` (then it is watched without one).
  int (*open_hang_file_out_of_reach)(const char* path);
  // The value of the setting `name` (a HANGWATCH_* variable): from the environment, else as it
  // was when the loader was loaded (load_environment.h: a program may have replaced its
  // environment since, as nginx's workers do). NULL when unset; always NULL under `secure`.
  const char* (*setting)(const char* name);
};

// What arm() did.
struct HangwatchPreloadArmed {
  int armed;    // the agent runs
  int inherit;  // HANGWATCH_INHERIT=1: what this process executes keeps the shim
  // HANGWATCH_THREADS is not `main`: the loader asks watch_thread() for each other thread that
  // runs a loop (thread_waits.h).
  int other_threads;
  char why[512];  // when not armed: one line, why (Start()'s message)
};

// watch_thread()'s answers.
#define HANGWATCH_THREAD_WATCHED 1
#define HANGWATCH_THREAD_NOT_SELECTED 0
#define HANGWATCH_THREAD_LEFT_OUT (-1)

// Agent library -> loader.
struct HangwatchPreloadAgent {
  uint32_t abi;
  // Reads the HANGWATCH_* settings (printing a line per malformed one). Called once, before
  // arm(), possibly early (before the program changes user) and on any thread.
  void (*prepare)(void);
  // After prepare(): the report's path and the directory of the open-hang files as the
  // settings name them ("" for none; strings that live until exit), for the loader to open
  // before the program changes user. Any thread; no allocation.
  void (*shim_files)(const char** report_path, const char** open_hang_dir);
  // On the main thread, at its first blocking wait: reports a slow start-up (the process was
  // loaded at `load_ns` and first waited at `first_wait_ns`, CLOCK_MONOTONIC: loading the agent
  // library is not the program's start-up) and starts the agent. Once per process (a forked
  // child arms again in its own).
  void (*arm)(uint64_t load_ns, uint64_t first_wait_ns, struct HangwatchPreloadArmed* out);
  // hangwatch::AboutToWait() / WokeUp(), on the main thread of an armed process (and on a
  // thread watch_thread() watched: its own word). Relaxed
  // atomic loads and stores and a clock read: errno untouched.
  void (*about_to_wait)(void);
  void (*woke_up)(void);
  // On a thread other than the main one of an armed process whose other_threads was set, once
  // per thread, when the loader found it runs a loop (thread_waits.h): watches the calling
  // thread (hangwatch::WatchThread, its name as the role) when HANGWATCH_THREADS selects its
  // name, until it exits. Returns HANGWATCH_THREAD_WATCHED, HANGWATCH_THREAD_NOT_SELECTED, or
  // HANGWATCH_THREAD_LEFT_OUT (selected, but every slot of Config::max_watched_threads is taken:
  // counted in GetStats().threads_not_watched; the loader writes it to the launch log). From
  // then on about_to_wait / woke_up act on that thread's own word. Not in a signal handler.
  int (*watch_thread)(void);
  // Before _exit()/_Exit() of an armed process, on any thread, maybe in a signal handler:
  // async-signal-safe. Ends the main thread's pass (on_main_thread), has the watchdog write the
  // open hang and the lag interval, and removes the open-hang file once it has.
  void (*before_exit)(int on_main_thread);
  // From atexit in the process that armed: hangwatch::Stop().
  void (*stop_at_exit)(void);
  // woke_up, with what the wait returned (integrations/preload/wake_trigger.h: the trigger
  // word of hangwatch/internal/pass_context.h, its data and events words), kept for the pass
  // it begins. Relaxed stores: errno untouched.
  void (*woke_up_from)(uint64_t trigger, uint64_t data, uint64_t events);
};

// The exported entry: the agent library's table, or NULL when `services` is of another ABI.
typedef const struct HangwatchPreloadAgent* (*HangwatchPreloadAgentInit)(
    const struct HangwatchPreloadServices* services);

}  // extern "C"

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_AGENT_ENTRY_H_
