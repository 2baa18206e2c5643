#include "tools/run/run_program.h"

#include <algorithm>
#include <string>
#include <vector>

#include "report/names.h"
#include "tools/run/launch_tree.h"
#include "tools/run/package_manager.h"

namespace hangwatch::tools {
namespace {

// An argument list the launch log cut short ("..." at the end): its tail is not known.
bool Cut(const std::string& argv) {
  return argv.size() >= 3 && argv.compare(argv.size() - 3, 3, "...") == 0;
}

// `tail` is the trailing words of `line`, and not all of it: what a wrapper runs ("java -cp .
// App" of "xvfb-run -a java -cp . App").
bool IsTrailingWords(const std::string& tail, const std::string& line) {
  if (tail.empty() || line.size() <= tail.size() || Cut(tail) || Cut(line)) return false;
  const size_t at = line.size() - tail.size();
  return line[at - 1] == ' ' && line.compare(at, tail.size(), tail) == 0;
}

size_t IndexOf(const LaunchLog& log, const LaunchProcess* p) {
  return static_cast<size_t>(p - log.processes.data());
}

// processes[index] descends from processes[ancestor] (not the same process); `parents`: each
// process's ParentIndex().
bool Descends(const std::vector<int>& parents, size_t index, size_t ancestor) {
  int at = static_cast<int>(index);
  // At most one step per process: a cycle of parents (pids reused) ends the walk.
  for (size_t steps = 0; steps < parents.size(); ++steps) {
    at = parents[static_cast<size_t>(at)];
    if (at < 0) return false;
    if (static_cast<size_t>(at) == ancestor) return true;
  }
  return false;
}

bool ArmedFrom(const LaunchProcess& p, size_t first_image) {
  for (size_t k = first_image; k < p.images.size(); ++k) {
    if (p.images[k].armed) return true;
  }
  return false;
}

// The command lines of `p`'s images from `first` on: what each was executed with (`line` for
// the first: the command `run` started, or what a wrapper executed).
std::vector<std::string> CommandLines(const LaunchProcess& p, size_t first,
                                      const std::string& line) {
  std::vector<std::string> out;
  for (size_t k = first; k < p.images.size(); ++k) {
    const LaunchExec* exec = k == first ? nullptr : p.images[k - 1].LastExec();
    if (k == first) {
      out.push_back(line);
    } else if (exec != nullptr) {
      out.push_back(exec->argv);
    }
  }
  return out;
}

// The command line the newest image of `p` was executed with (`line` when it is `first`), or ""
// when not known.
std::string NewestCommandLine(const LaunchProcess& p, size_t first, const std::string& line) {
  const size_t newest = p.images.size() - 1;
  if (newest == first) return line;
  const LaunchExec* exec = newest > first ? p.images[newest - 1].LastExec() : nullptr;
  return exec != nullptr ? exec->argv : "";
}

// The process a package manager's process (processes[runner]) forked to run a script: a child
// that executed a program (the script's shell; its image 1 is that program's). npm
// start runs prestart, start and poststart one after the other: the last whose program or a
// process it started armed (the hooks' build steps and echo are not the program), else the last.
const LaunchProcess* ScriptProcess(const LaunchLog& log, const std::vector<int>& parents,
                                   size_t runner) {
  const LaunchProcess* last = nullptr;
  const LaunchProcess* last_watched = nullptr;
  for (size_t i = 0; i < log.processes.size(); ++i) {
    const LaunchProcess& q = log.processes[i];
    if (parents[i] != static_cast<int>(runner) || q.images[0].LastExec() == nullptr) continue;
    last = &q;
    bool watched = ArmedFrom(q, 1);
    for (size_t j = 0; j < log.processes.size() && !watched; ++j) {
      watched = Descends(parents, j, i) && log.processes[j].ArmedImage() != nullptr;
    }
    if (watched) last_watched = &q;
  }
  return last_watched != nullptr ? last_watched : last;
}

// The Java launcher (its executable or name), whose main thread joins the thread that runs
// main().
bool IsJava(const LaunchImage& image) {
  return report::ModuleFileName(image.exe) == "java" ||
         image.exe.find("/jvm/") != std::string::npos || image.name == "java";
}

}  // namespace

RunProgram FindRunProgram(const LaunchLog& log, int64_t root_pid, const std::string& command_line) {
  RunProgram program;
  for (const LaunchProcess& p : log.processes) {
    if (p.pid == root_pid) {
      program.process = &p;
      break;
    }
  }
  if (program.process == nullptr) return program;
  const size_t n = log.processes.size();
  std::vector<int> parents(n);
  for (size_t i = 0; i < n; ++i) parents[i] = ParentIndex(log, i);
  // The launch log joins arguments by spaces, with tabs and newlines as spaces.
  std::string line = command_line;
  for (char& c : line) c = c == '\t' || c == '\n' || c == '\r' ? ' ' : c;
  // The script's shell that a package manager ran is named after the package manager.
  bool script_shell = false;
  // Each step hands over to a later process: at most one step per process.
  for (size_t steps = 0; steps < n; ++steps) {
    const LaunchProcess& current = *program.process;
    const size_t current_index = IndexOf(log, &current);
    // A package manager running a script (npm start) hands over to it, though its own loop armed.
    if (program.first_image < current.images.size()) {
      const std::string runner =
          ScriptRunner(current.Last(), NewestCommandLine(current, program.first_image, line));
      const LaunchProcess* script =
          runner.empty() ? nullptr : ScriptProcess(log, parents, current_index);
      if (script != nullptr) {
        program.wrapper = runner;
        program.process = script;
        program.first_image = 1;
        program.handed_over = true;
        line = script->images[0].LastExec()->argv;
        script_shell = true;
        continue;
      }
    }
    if (ArmedFrom(current, program.first_image)) break;  // a watched program: its own
    const std::vector<std::string> lines = CommandLines(current, program.first_image, line);
    const LaunchProcess* next = nullptr;
    size_t next_image = 0;
    const std::string* wrapper_line = nullptr;
    for (size_t i = 0; i < n; ++i) {
      if (!Descends(parents, i, current_index)) continue;
      const LaunchProcess& q = log.processes[i];
      for (size_t k = 0; k < q.images.size(); ++k) {
        const LaunchExec* exec = q.images[k].LastExec();
        if (exec == nullptr) continue;
        for (const std::string& l : lines) {
          if (IsTrailingWords(exec->argv, l)) next = &q, next_image = k + 1, wrapper_line = &l;
        }
      }
    }
    if (next == nullptr) break;
    // The wrapper is the program that forked it (xvfb-run under `timeout 60 xvfb-run -a CMD`),
    // named as it was invoked: a script's process is named after its interpreter.
    const int parent = parents[IndexOf(log, next)];
    std::string wrapper = *wrapper_line;
    if (parent >= 0 && static_cast<size_t>(parent) != current_index) {
      const LaunchProcess& by = log.processes[static_cast<size_t>(parent)];
      const LaunchExec* exec =
          by.images.size() > 1 ? by.images[by.images.size() - 2].LastExec() : nullptr;
      if (exec != nullptr) wrapper = exec->argv;
    }
    if (!script_shell)
      program.wrapper = std::string(report::ModuleFileName(wrapper.substr(0, wrapper.find(' '))));
    script_shell = false;
    program.process = next;
    program.first_image = next_image;
    program.handed_over = true;
    line = next->images[next_image - 1].LastExec()->argv;
  }
  const size_t index = IndexOf(log, program.process);
  program.started.assign(n, false);
  for (size_t i = 0; i < n; ++i) program.started[i] = Descends(parents, i, index);
  return program;
}

std::string ProgramName(const RunProgram& program) {
  const LaunchProcess* p = program.process;
  if (p == nullptr) return "";
  const LaunchExec* became = p->Became();
  return became != nullptr ? std::string(report::ModuleFileName(became->path)) : p->Last().name;
}

bool ProgramWatched(const LaunchLog& log, const RunProgram& program) {
  if (program.process == nullptr) return log.AnyArmed();
  if (ArmedFrom(*program.process, program.first_image)) return true;
  for (size_t i = 0; i < program.started.size() && i < log.processes.size(); ++i) {
    if (program.started[i] && log.processes[i].ArmedImage() != nullptr) return true;
  }
  return false;
}

bool IsHelper(const LaunchLog& log, const RunProgram& program, const LaunchProcess& p) {
  if (!program.handed_over || &p == program.process) return false;
  const size_t index = IndexOf(log, &p);
  return index < program.started.size() && !program.started[index];
}

std::string WhyImageNeverArmed(const LaunchImage& image, bool alive) {
  if (!image.main_joined) {
    return alive ? " has not waited for events yet" : " never waited for events";
  }
  if (image.joined_without_loops) {
    return std::string(alive ? " has not waited for events" : " never waited for events") +
           ": its main thread waited in pthread_join for another thread, and none of the threads "
           "--threads selects " +
           (alive ? "has run" : "ran") +
           " an event loop (a thread is watched once it waits for events in a loop; a JVM's "
           "main() runs on a thread that does not)";
  }
  std::string out =
      std::string(alive ? " has not waited for events" : " never waited for events") +
      ": its main thread waited in pthread_join for another thread (the program ran on other "
      "threads; hangwatch watches a process's main thread)";
  if (IsJava(image)) {
    out +=
        "; the JVM runs main() and its loops on threads it starts: watch them with --threads "
        "loops (or --threads NAME,...; docs/java.md)";
  }
  return out;
}

std::string WhyProgramNotWatched(const RunProgram& program, const std::string& search_path) {
  const LaunchProcess* p = program.process;
  if (p == nullptr) return "";
  std::string out = ProgramName(program);
  if (!program.wrapper.empty()) out += " (run by " + program.wrapper + ")";
  const LaunchExec* became = p->Became();
  if (became != nullptr) {
    out += " was not watched: " + p->Last().name + " executed " + became->path +
           WhyExecNotWatched(*became, search_path);
  } else if (p->Last().off) {
    out += " could not be watched: " + p->Last().off_reason;
  } else {
    out += WhyImageNeverArmed(p->Last(), IsAlive(p->pid, p->start_time));
  }
  const size_t started =
      static_cast<size_t>(std::count(program.started.begin(), program.started.end(), true));
  if (started > 0) {
    out += started == 1
               ? "; the process it started was not watched either"
               : "; none of the " + std::to_string(started) + " processes it started was watched";
  }
  return out;
}

}  // namespace hangwatch::tools
