// The program a `hangwatch run` is for, among the processes its command started: the one whose
// exit status `run` returns. A wrapper (xvfb-run, timeout, env, `sh -c`, a script that runs
// "$@") is not the program: it hands over to the command it was given and returns its status,
// and the processes it starts on the side (Xvfb under xvfb-run) are its helpers. A runner
// (`make check`, `bash tests.sh`) is the program: the tests it starts are processes it started.
//
// The rule, from the launch log (launch_log.h): start at the process `run` started, followed
// through the programs it executes (its images). While none of its images armed, a process it
// started (a descendant) that executed the trailing words of the current program's own command
// line is the wrapper's command: "xvfb-run -a java -cp . App" hands over to the process that
// executed "java -cp . App", "sh -c 'make test'" to the one that executed "make test". When
// several did, the last one logged (a shell's last command sets its status). Processes that
// wrappers started with posix_spawn are not followed (shells and coreutils fork and execute).
//
// A package manager running a script (node running npm, npx, yarn or pnpm: `npm start`, `npm
// test`, `npm run X`, `npx cmd`) is a wrapper whether or not its own loop armed: it hands over
// to the process it forked to run the script (which executed the script's shell, followed from
// there like any wrapper's command), and its own process is a helper. Of several such processes
// (prestart, start, poststart), the last whose program or a process it started armed, else the
// last. One that installs packages (npm ci: the scripts are the dependencies') or ran no script
// (npm --version) is the program.
#ifndef HANGWATCH_TOOLS_RUN_RUN_PROGRAM_H_
#define HANGWATCH_TOOLS_RUN_RUN_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

struct RunProgram {
  // Null: the command did not load the shim (nothing is known of its processes).
  const LaunchProcess* process = nullptr;
  // Its images from this one on are the program's (the ones before ran the wrapper that forked
  // it); images.size(): it executed a program that did not load the shim.
  size_t first_image = 0;
  // A wrapper handed over to it: it is not the process `run` started (or is a later image of it).
  bool handed_over = false;
  std::string wrapper;  // the last wrapper's name, when handed over
  // Per process of the launch log: the program started it (it descends from the program's
  // process).
  std::vector<bool> started;
};

// The program of a run: `root_pid` is the process `run` started, `command_line` its arguments
// joined by spaces. The result points into `log`, and is for that log only.
RunProgram FindRunProgram(const LaunchLog& log, int64_t root_pid, const std::string& command_line);

// The program's name: its newest image's, or the file it executed without the shim.
std::string ProgramName(const RunProgram& program);

// The program, or a process it started, armed.
bool ProgramWatched(const LaunchLog& log, const RunProgram& program);

// `p` is neither the program nor a process it started: a wrapper's helper (false when no
// wrapper handed over).
bool IsHelper(const LaunchLog& log, const RunProgram& program, const LaunchProcess& p);

// The line `run` prints when a wrapper handed over to a program that was not watched, nor any
// process it started: "java (run by xvfb-run) was not watched: its main thread ...". Not
// escaped.
std::string WhyProgramNotWatched(const RunProgram& program, const std::string& search_path);

// Why an image that neither armed, gave up nor executed anything was not watched, after its
// name: " never waited for events", " has not waited for events yet" (`alive`), or, when its
// main thread waited in pthread_join, that the program ran on other threads (and for a Java
// program what works instead).
std::string WhyImageNeverArmed(const LaunchImage& image, bool alive);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_RUN_PROGRAM_H_
