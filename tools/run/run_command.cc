// `hangwatch run`: runs a command with the preload shim injected, then reports its hangs (--help).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hang/files/jsonl_writer.h"
#include "hang/files/regular_file.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "integrations/preload/thread_selection.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/gate/gate_options.h"
#include "tools/gate/gate_output.h"
#include "tools/reader/report_jit_names.h"
#include "tools/reader/report_reader.h"
#include "tools/reader/report_symbolize.h"
#include "tools/report/formats/report_formats.h"
#include "tools/run/junit.h"
#include "tools/run/launch_tree.h"
#include "tools/run/run_command.h"
#include "tools/run/run_dir.h"
#include "tools/run/run_fatal_hangs.h"
#include "tools/run/run_processes.h"
#include "tools/run/run_program.h"
#include "tools/run/run_report_follower.h"
#include "tools/run/run_shim.h"
#include "tools/run/run_summary.h"
#include "tools/run/run_usage.h"
#include "unwind/proc_files.h"

extern char** environ;

namespace hangwatch::tools {
namespace {

constexpr int kExitHang = 3;
constexpr int kExitNotWatched = 4;
constexpr int kExitCannotExecute = 127;
constexpr char kRunDirParent[] = "/tmp";

// Every message of `run` goes through EscapeForTerminal (Fail does): process names and paths
// come from the launch log, reports and open-hang files, which the watched processes wrote.
constexpr char kCommand[] = "hangwatch run";

std::string AbsolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return p;
  return std::string(cwd) + "/" + p;
}

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Fails unless `path` can be appended to (created when missing, never truncated). A file this
// check created is removed again unless `keep_created`. The report (kept) is opened by the rules
// the shim writes it with (hang/files/regular_file.h: no symbolic link, FIFO or device), so that
// what the shim would refuse stops the run here, before anything is created through a planted link.
bool CheckWritable(const std::string& path, bool keep_created, const std::string& flag,
                   std::string* error) {
  struct stat st;
  const bool existed = stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) {
    *error = "cannot write " + flag + " " + path + ": it is a directory";
    return false;
  }
  std::string why;
  const int fd = keep_created
                     ? agent::OpenRegularFile(path, O_WRONLY | O_APPEND | O_CREAT, 0600, &why)
                     : open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error =
        "cannot write " + flag + " " + path + ": " + (keep_created ? why : std::strerror(errno));
    return false;
  }
  close(fd);
  if (!existed && !keep_created) unlink(path.c_str());
  return true;
}

void WriteJunit(const std::string& path, const std::string& xml) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << xml;
  out.close();
  if (!out) {
    std::fprintf(stderr, "hangwatch run: cannot write %s\n", EscapeForTerminal(path).c_str());
  }
}

struct RunOptions {
  uint32_t threshold_ms = 250, sample_ms = 0, startup_ms = 2000;
  uint32_t max_frames = 0;  // 0: the agent's default
  bool python = true;
  bool js = true;
  bool ruby = true;
  bool java = true;
  bool context = true, input = true;  // --no-context, --no-input
  std::string report_path;            // absolute; empty: the run directory's own report
  std::string threads;                // --threads (HANGWATCH_THREADS); empty: the main thread alone
  GateOptions gate;
  bool fail_on_hang = false, startup_stall = true, inherit = true, live = false, quiet = false;
  bool explain = false;
  int command_at = 0;  // argv index of COMMAND
};

// Reads the options before COMMAND. The exit status when `run` is done (--help, bad usage).
std::optional<int> ParseRunOptions(int argc, char** argv, RunOptions* o) {
  FlagParser flags(kCommand);
  flags.Help({kRunUsage, kGateFlagsUsage, kRunUsageTail});
  AddGateFlags(&flags, /*baseline_lists=*/false, &o->gate);
  for (auto [flag, out] :
       {std::pair{"--threshold-ms", &o->threshold_ms}, std::pair{"--sample-ms", &o->sample_ms},
        std::pair{"--startup-ms", &o->startup_ms}}) {
    flags.Number({flag}, 1, 3600000, out, std::string(flag) + " wants 1..3600000, not '{}'");
  }
  flags.Number({"--max-frames"}, 1, 1024, &o->max_frames, "--max-frames wants 1..1024, not '{}'");
  flags.Switch({"--no-python"}, [o] { o->python = false; });
  flags.Switch({"--no-js"}, [o] { o->js = false; });
  flags.Switch({"--no-ruby"}, [o] { o->ruby = false; });
  flags.Switch({"--no-java"}, [o] { o->java = false; });
  flags.Switch({"--no-context"}, [o] { o->context = false; });
  flags.Switch({"--no-input"}, [o] { o->input = false; });
  flags.Value({"--threads"}, [o](const std::string& v) {
    preload::ThreadSelection selection;
    std::string error;
    if (!preload::ParseThreadSelection(v, &selection, &error)) {
      return "--threads '" + EscapeForTerminal(v) + "' " + error;
    }
    o->threads = v;
    return std::string();
  });
  flags.Value({"--report"}, [o](const std::string& v) {
    o->report_path = AbsolutePath(v);
    return std::string();
  });
  flags.Switch({"--fail-on-hang"}, [o] { o->fail_on_hang = true; });
  flags.Switch({"--no-startup-stall"}, [o] { o->startup_stall = false; });
  flags.Switch({"--inherit"}, [o] { o->inherit = true; });
  flags.Switch({"--no-inherit"}, [o] { o->inherit = false; });
  flags.Switch({"--explain"}, [o] { o->explain = true; });
  flags.Switch({"--live"}, [o] { o->live = true; });
  flags.Switch({"--quiet"}, [o] { o->quiet = true; });
  flags.StopAtPositional();
  if (const std::optional<int> done = flags.Parse(argc, argv)) return done;
  o->command_at = flags.rest();
  if (o->command_at >= argc) {
    return Fail(kCommand, "no command given (hangwatch run [options] -- COMMAND [ARGS...])");
  }
  if (o->sample_ms > o->threshold_ms) {
    return Fail(kCommand, "--sample-ms must not be larger than --threshold-ms");
  }
  return std::nullopt;
}

// Output paths are checked before the command starts: a CI run must not find out at its end
// that its results cannot be written. The JUnit file is written at the end (a file created by
// the check is removed again); the report is only ever appended to (the shim creates it at the
// first hang anyway). False with *error set.
bool CheckOutputs(const RunOptions& o, GateInputs* gate_inputs, std::string* error) {
  if (o.gate.gating && !LoadGateInputs(o.gate, gate_inputs, error)) return false;
  if (!o.gate.junit.empty() &&
      !CheckWritable(o.gate.junit, /*keep_created=*/false, "--junit", error)) {
    return false;
  }
  if (!o.gate.markdown.empty() &&
      !CheckWritable(o.gate.markdown, /*keep_created=*/false, "--markdown", error)) {
    return false;
  }
  return o.report_path.empty() ||
         CheckWritable(o.report_path, /*keep_created=*/true, "--report", error);
}

// The check of --report created it; when nothing was watched and no process of the run lives,
// nothing wrote to it: an empty file would look like a clean report. True when it is not there
// (any more).
bool RemoveEmptyReport(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  return S_ISREG(st.st_mode) && st.st_size == 0 && unlink(path.c_str()) == 0;
}

// The child's environment: ours, with the shim first in LD_PRELOAD and HANGWATCH_* set.
// *search_path: the PATH it gets (to explain a command that was not found).
std::vector<std::string> ChildEnvironment(const RunOptions& o, const std::string& shim,
                                          const std::string& tmpdir, const std::string& launch_log,
                                          std::string* search_path) {
  std::vector<std::string> env;
  std::string preload = shim;
  *search_path = "/usr/local/bin:/usr/bin:/bin";
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv = *e;
    if (kv.substr(0, 11) == "LD_PRELOAD=") {
      if (kv.size() > 11) preload += ":" + std::string(kv.substr(11));
      continue;
    }
    if (kv.substr(0, 5) == "PATH=") *search_path = std::string(kv.substr(5));
    // Ours are set below; the cache directory, labels and pass timing are the user's.
    if (kv.substr(0, 10) == "HANGWATCH_" && kv.substr(0, 20) != "HANGWATCH_CACHE_DIR=" &&
        kv.substr(0, 17) != "HANGWATCH_LABELS=" &&
        kv.substr(0, 26) != "HANGWATCH_LAG_INTERVAL_MS=" &&
        kv.substr(0, 22) != "HANGWATCH_TIME_PASSES=") {
      continue;
    }
    env.emplace_back(kv);
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("HANGWATCH_THRESHOLD_MS=" + std::to_string(o.threshold_ms));
  if (o.sample_ms) env.push_back("HANGWATCH_SAMPLE_MS=" + std::to_string(o.sample_ms));
  env.push_back("HANGWATCH_REPORT=" + o.report_path);
  env.push_back("HANGWATCH_OPEN_HANG_DIR=" + tmpdir);
  env.push_back("HANGWATCH_LAUNCH_LOG=" + launch_log);
  env.push_back(std::string("HANGWATCH_LOG=") + (o.live ? "1" : "0"));
  // Our stderr is one the shim may print on (--live), whatever file it is (stderr_policy.h).
  if (struct stat err_st; fstat(2, &err_st) == 0) {
    env.push_back("HANGWATCH_STDERR=" + std::to_string(err_st.st_dev) + ":" +
                  std::to_string(err_st.st_ino));
  }
  env.push_back(std::string("HANGWATCH_STARTUP_STALL=") + (o.startup_stall ? "1" : "0"));
  env.push_back("HANGWATCH_STARTUP_MS=" + std::to_string(o.startup_ms));
  if (o.inherit) env.push_back("HANGWATCH_INHERIT=1");
  if (o.max_frames) env.push_back("HANGWATCH_MAX_FRAMES=" + std::to_string(o.max_frames));
  if (!o.python) env.push_back("HANGWATCH_PYTHON=0");
  if (!o.js) env.push_back("HANGWATCH_JS=0");
  if (!o.ruby) env.push_back("HANGWATCH_RUBY=0");
  if (!o.java) env.push_back("HANGWATCH_JAVA=0");
  if (!o.context) env.push_back("HANGWATCH_CONTEXT=0");
  if (!o.input) env.push_back("HANGWATCH_INPUT=0");
  if (!o.threads.empty()) env.push_back("HANGWATCH_THREADS=" + o.threads);
  return env;
}

// The run, from the command's start to the summary.
struct RunState {
  std::string command, suite;  // COMMAND, and COMMAND with its arguments (the JUnit suite)
  std::string tmpdir, launch_log, search_path;
  bool own_report = false;  // the report is the run directory's (no --report)
  pid_t child = -1;
  std::chrono::steady_clock::time_point started;
  int status = 0;     // the command's wait status
  int exit_code = 0;  // its exit status (128+N when killed by signal N)
  double elapsed = 0;
  LaunchLog log;
  Report report;  // what the run appended to the report, and the fatal hangs
  size_t lost_hangs = 0;
  std::string report_unread;  // "PATH: why" when the report stopped reading: hangs may be missed
  size_t unjudged_shutdown_hangs = 0;  // shutdown-phase hangs, without --judge-shutdown
  std::vector<const LaunchProcess*> still_running;
  std::vector<int64_t> locked;  // pids whose open-hang file is locked (alive)
  // How the processes `run` reaped itself ended (pid -> wait status): the command, and orphans
  // re-parented to it. An open hang of one that exited is not fatal (EndedByExit).
  std::map<int64_t, int> reaped;
  bool keep_dir = false;
  bool report_not_created = false;  // --report was not there before, and nothing wrote it
  std::vector<WatchedProcess> watched;
  bool stalled = false, none_watched = false;
  // The program whose status the run returns (run_program.h); not watched, nor anything it
  // started (none_watched, or a wrapper's helpers only).
  RunProgram program;
  bool program_unwatched = false;
  GateVerdict verdict;
  std::string not_watched;  // why nothing (or not the program) was watched
};

// Forks and executes COMMAND (argv[o.command_at...]). The exit status when it could not start
// (a failed exec reports its errno through a close-on-exec pipe: the error line is printed here,
// and nothing else, no summary of a run that never started); nullopt when it runs.
std::optional<int> StartCommand(const RunOptions& o, char** argv, std::vector<std::string> env,
                                RunState* run) {
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    RemoveRunDir(run->tmpdir);
    return Fail(kCommand, std::string("pipe: ") + std::strerror(errno));
  }
  // Orphaned descendants of the command (daemons) become children of `run` rather than of
  // init while it runs: it can see them, and wait for them to reach their event loop.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  run->started = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) {
    const int fork_errno = errno;
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    RemoveRunDir(run->tmpdir);
    return Fail(kCommand, std::string("fork: ") + std::strerror(fork_errno));
  }
  if (child == 0) {
    close(exec_pipe[0]);
    execvpe(argv[o.command_at], argv + o.command_at, envp.data());
    const int exec_errno = errno;
    ssize_t unused = write(exec_pipe[1], &exec_errno, sizeof exec_errno);
    (void)unused;
    _exit(127);
  }
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  run->child = child;
  if (got != static_cast<ssize_t>(sizeof exec_errno)) return std::nullopt;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RemoveRunDir(run->tmpdir);
  const std::string message = "cannot execute '" + run->command + "': " + std::strerror(exec_errno);
  Fail(kCommand, message);
  if (!o.gate.junit.empty()) {
    WriteJunit(o.gate.junit, FormatJunitError(run->suite, "not-executed", message, 0));
  }
  return kExitCannotExecute;
}

// Waits for the command to end, then (processes that loaded the shim and still live without
// having armed: a daemon between its fork and its event loop) gives them the start-up time to
// arm or to end. While it runs, terminal signals reach the command directly (same process
// group): they are ignored here; the ones sent to `run` alone are forwarded.
void WaitForCommand(const RunOptions& o, RunState* run) {
  struct sigaction ign {
  }, fwd{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ign.sa_handler = SIG_IGN;
  fwd.sa_handler = Forward;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  g_child = run->child;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);
  for (;;) {
    // Any child: orphans re-parented to `run` are reaped as they end.
    int st = 0;
    const pid_t pid = waitpid(-1, &st, 0);
    if (pid > 0) run->reaped[pid] = st;
    if (pid == run->child) {
      run->status = st;
      break;
    }
    if (pid < 0 && errno != EINTR) break;  // cannot happen: the command is our child
  }
  g_child = -1;
  run->log = ReadLaunchLog(run->launch_log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.startup_ms);
  while (WaitingToArm(run->log, run->search_path) && std::chrono::steady_clock::now() < deadline) {
    usleep(20000);
    run->log = ReadLaunchLog(run->launch_log);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  run->elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - run->started).count();
  const int status = run->status;
  run->exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : 1;
}

// What the run left: the hangs it appended to the report, plus hangs that were open when a
// process died; the processes it watched; whether the run directory stays (processes of this
// run still alive, daemons, background children: it holds their open-hang files).
void CollectResults(const RunOptions& o, RunReportFollower* report_file, RunState* run) {
  // A helper its wrapper stopped at the end (Xvfb under xvfb-run) is not still running.
  WaitForLastProcesses(run->log, std::chrono::seconds(1));
  run->still_running = LiveProcesses(run->log);
  run->locked = LockedOpenHangFiles(run->tmpdir);
  auto is_live = [run](int64_t pid) {
    for (const LaunchProcess* p : run->still_running) {
      if (p->pid == pid) return true;
    }
    return std::find(run->locked.begin(), run->locked.end(), pid) != run->locked.end();
  };
  {
    // Torn lines are counted in the report; a file that no longer reads is said, and what was
    // read before it is kept.
    JsonLinesParser parser(&run->report);
    std::string error;
    if (!report_file->ReadAppended(&parser, &error)) run->report_unread = error;
  }
  // Orphans that ended since: how they ended decides whether their open hang was fatal.
  for (int st = 0;;) {
    const pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) break;
    run->reaped[pid] = st;
  }
  for (HangRecord& fatal : TakeFatalHangs(run->tmpdir, is_live)) {
    if (auto it = run->reaped.find(fatal.pid); it != run->reaped.end()) {
      EndedByExit(&fatal, it->second);
    }
    if (!run->own_report) {
      if (const int err = AppendToReport(o.report_path, fatal); err != 0) {
        run->log.AddUnwritten("hang", err);
      }
    }
    run->report.hangs.push_back(std::move(fatal));
  }
  // JIT code of a runtime that writes its perf map at exit (the JVM's DumpPerfMapAtExit): the map
  // is there now that the command has ended.
  NameJitFrames(&run->report);
  // Hangs the report file did not take (a full disk): never "no hangs".
  run->lost_hangs = run->log.UnwrittenHangs();
  run->keep_dir = !run->still_running.empty() || !run->locked.empty();
  if (!run->keep_dir) RemoveRunDir(run->tmpdir);

  run->watched = WatchedProcesses(run->log, run->report);
  for (WatchedProcess& w : run->watched) {
    w.running = w.start_time != 0 ? IsAlive(w.pid, w.start_time) : is_live(w.pid);
  }
  // Shutdown-phase hangs (the process's own exit) are shown, judged only with --judge-shutdown:
  // by --fail-on-hang here, by the gate's verdict with gate flags.
  if (!o.gate.budgets.judge_shutdown) {
    run->unjudged_shutdown_hangs = CountShutdownHangs(run->report.hangs);
  }
  // A report that could not be read to its end may hide hangs: never "no hangs" then.
  run->stalled = run->report.hangs.size() > run->unjudged_shutdown_hangs ||
                 !run->report.startup_stalls.empty() || run->lost_hangs > 0 ||
                 !run->report_unread.empty();
  run->none_watched = run->watched.empty();
  // A wrapper's helpers watched (Xvfb) do not make up for the program it ran.
  run->program = FindRunProgram(run->log, run->child, run->suite);
  run->program_unwatched =
      run->none_watched || (run->program.handed_over && !ProgramWatched(run->log, run->program));
  for (WatchedProcess& w : run->watched) {
    for (const LaunchProcess& p : run->log.processes) {
      if (p.pid == w.pid && p.start_time == w.start_time) {
        w.helper = IsHelper(run->log, run->program, p);
      }
    }
  }
}

// The exit status of a run that started. With gate flags, the gate judges the hangs: its
// verdict on the report, symbolized offline so that culprits have source lines.
int Judge(const RunOptions& o, const GateInputs& gate_inputs, RunState* run) {
  if (o.gate.gating) {
    std::vector<std::string> warnings;
    SymbolizeReport(ReportSymbolizeOptions{}, &run->report, &warnings);
    run->verdict = ComputeVerdict(run->report, {}, 0,
                                  gate_inputs.has_baseline ? &gate_inputs.baseline : nullptr,
                                  gate_inputs.baseline_tallies, gate_inputs.allow, o.gate.budgets);
    if (run->program_unwatched) return kExitNotWatched;
    return !run->verdict.passed || run->lost_hangs > 0 || !run->report_unread.empty() ||
                   (o.fail_on_hang && !run->report.startup_stalls.empty())
               ? kExitHang
               : run->exit_code;
  }
  // The program not watched: 4, whatever its wrapper's helpers did (their hangs are listed).
  if (o.fail_on_hang && run->program_unwatched && !run->none_watched) return kExitNotWatched;
  if (o.fail_on_hang && run->stalled) return kExitHang;
  if (o.fail_on_hang && run->none_watched) return kExitNotWatched;
  return run->exit_code;
}

// "N hangs in COMMAND" or "no hangs", the summary and the processes watched.
void PrintHangs(const RunOptions& o, const RunState& run) {
  if (!run.report_unread.empty()) {
    std::fprintf(stderr,
                 "hangwatch run: %s: the hangs after that point of the report are not counted\n",
                 EscapeForTerminal(run.report_unread).c_str());
  }
  // Only helpers were watched: the hangs are theirs, not the command's.
  const std::string where = (run.program_unwatched ? "the helpers of " : "") + run.command;
  if (run.stalled || run.unjudged_shutdown_hangs > 0) {
    const size_t hangs = run.report.hangs.size() + run.lost_hangs;
    std::fprintf(stderr, "hangwatch run: %zu hang%s in %s (threshold %u ms)\n", hangs,
                 hangs == 1 ? "" : "s", EscapeForTerminal(where).c_str(), o.threshold_ms);
    if (const size_t n = run.unjudged_shutdown_hangs; n > 0) {
      std::fprintf(stderr,
                   "hangwatch run: %zu of them in the shutdown phase (a pass the process's exit "
                   "ended): not judged without --judge-shutdown\n",
                   n);
    }
    const std::string summary = FormatSummary(run.report, 16);
    std::fwrite(summary.data(), 1, summary.size(), stderr);
  } else {
    const bool so_far = std::any_of(run.watched.begin(), run.watched.end(),
                                    [](const WatchedProcess& w) { return w.running; });
    std::fprintf(stderr, "hangwatch run: no hangs in %s%s (threshold %u ms)\n",
                 EscapeForTerminal(where).c_str(), so_far ? " so far" : "", o.threshold_ms);
  }
  const std::string list = FormatWatched(run.watched);
  std::fwrite(list.data(), 1, list.size(), stderr);
  if ((run.stalled || run.unjudged_shutdown_hangs > 0) && !run.own_report) {
    std::fprintf(stderr, "hangwatch run: details: hangwatch report %s\n",
                 EscapeForTerminal(o.report_path).c_str());
  }
}

// "gate PASSED" and the lines under it, each prefixed as the rest of the summary.
void PrintVerdict(const GateVerdict& verdict) {
  std::string text = FormatGateText(verdict, 16);
  if (text.compare(0, 16, "hangwatch gate: ") == 0) text.replace(0, 16, "gate ");
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    out += "hangwatch run: " + text.substr(at, end - at);
    at = end;
  }
  std::fwrite(out.data(), 1, out.size(), stderr);
}

// The processes still running after COMMAND ended, and where their hangs go.
void PrintStillRunning(const RunOptions& o, const RunState& run) {
  std::string names;
  for (const LaunchProcess* p : run.still_running) {
    if (!names.empty()) names += ", ";
    // After an exec without the shim it is another program, which is not watched.
    names += "pid " + std::to_string(p->pid) + " " + p->NewestName() +
             (p->Became() != nullptr       ? " (not watched)"
              : p->ArmedImage() != nullptr ? " (watched)"
                                           : " (not waiting for events yet)");
  }
  for (int64_t pid : run.locked) {
    bool listed = false;
    for (const LaunchProcess* p : run.still_running) listed |= p->pid == pid;
    if (!listed) names += (names.empty() ? "pid " : ", pid ") + std::to_string(pid);
  }
  std::fprintf(stderr, "hangwatch run: still running after %s ended: %s\n",
               EscapeForTerminal(run.command).c_str(), EscapeForTerminal(names).c_str());
  std::fprintf(stderr,
               "hangwatch run: their hangs go to %s; %s is kept for them (a later hangwatch "
               "run removes it once they have exited)\n",
               EscapeForTerminal(o.report_path).c_str(), run.tmpdir.c_str());
}

// Everything `run` says on stderr once COMMAND has ended.
void PrintSummary(const RunOptions& o, int result, RunState* run) {
  if (run->none_watched) {
    run->not_watched = "no process was watched: " +
                       ExplainNothingWatched(run->log, run->child, run->command, run->search_path);
    // Printed even with --quiet: a gate that watched nothing must not pass in silence.
    std::fprintf(stderr, "hangwatch run: %s\n", EscapeForTerminal(run->not_watched).c_str());
  } else {
    if (run->program_unwatched) {
      // First, and even with --quiet: a green list of helpers must not hide it.
      run->not_watched =
          "the program was not watched: " + WhyProgramNotWatched(run->program, run->search_path);
      std::fprintf(stderr, "hangwatch run: %s\n", EscapeForTerminal(run->not_watched).c_str());
    }
    if (!o.quiet) PrintHangs(o, *run);
  }
  if (!o.quiet) {
    // Programs that ran without the shim: a green run must not imply they were looked at.
    const std::string unwatched =
        EscapeForTerminal(FormatUnwatchedExecs(UnwatchedExecs(run->log), 5));
    std::fwrite(unwatched.data(), 1, unwatched.size(), stderr);
    if (run->report_not_created) {
      std::fprintf(stderr, "hangwatch run: no report: %s was not created (nothing was watched)\n",
                   EscapeForTerminal(o.report_path).c_str());
    }
  }
  // Printed even with --quiet: lost hangs are a problem, and they fail --fail-on-hang.
  const std::string unwritten =
      EscapeForTerminal(FormatUnwritten(run->log.unwritten, o.report_path));
  std::fwrite(unwritten.data(), 1, unwritten.size(), stderr);
  if (o.gate.gating && !run->program_unwatched && (!o.quiet || !run->verdict.passed)) {
    PrintVerdict(run->verdict);
  }
  if (run->exit_code != 0 && (!o.quiet || result != run->exit_code)) {
    std::fprintf(stderr, "hangwatch run: %s %s\n", EscapeForTerminal(run->command).c_str(),
                 DescribeWaitStatus(run->status).c_str());
  }
  if (run->keep_dir && !o.quiet) PrintStillRunning(o, *run);
  if (o.explain) {
    const std::string tree =
        EscapeForTerminal(FormatLaunchTree(run->log, run->child, run->command, run->search_path));
    std::fwrite(tree.data(), 1, tree.size(), stderr);
  }
}

// --junit, and with gate flags --markdown and --github.
void WriteOutputs(const RunOptions& o, const RunState& run) {
  const GateOptions& gate = o.gate;
  if (!gate.junit.empty()) {
    // The hangs --fail-on-hang judges: shutdown-phase ones only with --judge-shutdown.
    Report judged = run.report;
    if (!gate.budgets.judge_shutdown) RemoveShutdownHangs(&judged.hangs);
    WriteJunit(gate.junit, run.program_unwatched ? FormatJunitError(run.suite, "not-watched",
                                                                    run.not_watched, run.elapsed)
                           : gate.gating ? FormatGateJunit(run.verdict, run.suite, run.elapsed)
                                         : FormatJunit(judged, run.suite, run.elapsed));
  }
  if (!gate.gating) return;
  if (!gate.markdown.empty()) {
    std::ofstream md(gate.markdown, std::ios::binary | std::ios::app);
    md << (run.program_unwatched
               ? "### hangwatch run: \xE2\x9D\x8C nothing was gated\n\n" + run.not_watched + "\n"
               : FormatGateMarkdown(run.verdict));
    md.close();
    if (!md) {
      std::fprintf(stderr, "hangwatch run: cannot write %s\n",
                   EscapeForTerminal(gate.markdown).c_str());
    }
  }
  if (gate.github && run.program_unwatched) {
    std::fprintf(stdout, "::error title=hangwatch%%3A nothing watched::%s\n",
                 EscapeForTerminal(run.not_watched).c_str());
    std::fflush(stdout);
  } else if (gate.github) {
    const char* workspace = std::getenv("GITHUB_WORKSPACE");
    const std::string lines = FormatGateGithub(run.verdict, workspace ? workspace : "");
    std::fwrite(lines.data(), 1, lines.size(), stdout);
    std::fflush(stdout);
  }
}

int Run(int argc, char** argv) {
  RunOptions o;
  if (const std::optional<int> done = ParseRunOptions(argc, argv, &o)) return *done;
  std::string error;
  const std::string shim = FindTrustedShim(&error);
  if (shim.empty()) return Fail(kCommand, error);
  GateInputs gate_inputs;
  struct stat report_st;
  const bool report_existed =
      !o.report_path.empty() && lstat(o.report_path.c_str(), &report_st) == 0;
  if (!CheckOutputs(o, &gate_inputs, &error)) return Fail(kCommand, error);

  RemoveStaleRunDirs(kRunDirParent, ReportFatalHangsOfEarlierRun);
  RunState run;
  if (!CreateRunDir(kRunDirParent, o.report_path, &run.tmpdir, &error)) {
    return Fail(kCommand, error);
  }
  run.launch_log = run.tmpdir + "/" + kLaunchLogFile;
  run.own_report = o.report_path.empty();
  if (run.own_report) o.report_path = run.tmpdir + "/report.jsonl";
  RunReportFollower report_file(o.report_path);  // the run's hangs, across rotations
  std::vector<std::string> env =
      ChildEnvironment(o, shim, run.tmpdir, run.launch_log, &run.search_path);
  for (int k = o.command_at; k < argc; ++k) {
    run.suite += (k > o.command_at ? " " : "") + std::string(argv[k]);
  }
  run.command = argv[o.command_at];

  if (const std::optional<int> failed = StartCommand(o, argv, std::move(env), &run)) {
    return *failed;
  }
  report_file.Follow();
  WaitForCommand(o, &run);
  CollectResults(o, &report_file, &run);
  if (run.none_watched && !run.own_report && !report_existed && !run.keep_dir) {
    run.report_not_created = RemoveEmptyReport(o.report_path);
  }
  const int result = Judge(o, gate_inputs, &run);
  PrintSummary(o, result, &run);
  WriteOutputs(o, run);
  return result;
}

}  // namespace

const Command kRunCommand = {
    "run", "run a command with the agent injected; report its hangs (CI gate)", Run};
}  // namespace hangwatch::tools
