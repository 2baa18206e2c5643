// `hangwatch run` and the programs its command starts: the shim is passed on to all of them by
// default (--no-inherit: not past a process that waited for events), what ran without it is
// named in the summary, --explain prints the launch tree with every reason a process was not
// watched, --quiet prints only what needs action, and a --report that nothing wrote is not left
// behind as an empty file. A wrapper's helpers watched do not make up for the program it ran:
// the program is the one whose status the run returns.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "tools/run/launch_log_reader.h"
#include "tools/run/run_dir.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kPython[] = "/usr/bin/python3";

// python3 reaches its event loop (a blocking select), then starts ARGS and waits for it in its
// loop (select on the child's stdout until it closes), as a runner does, and exits with its
// status.
std::vector<std::string> PythonThatRuns(const std::string& args) {
  return {kPython, "-c",
          absl::StrCat("import select, subprocess, sys\n"
                       "select.select([], [], [], 0.05)\n"
                       "child = subprocess.Popen([",
                       args,
                       "], stdout=subprocess.PIPE)\n"
                       "while select.select([child.stdout], [], [], 30)[0] and "
                       "child.stdout.read1():\n"
                       "    pass\n"
                       "sys.exit(child.wait())\n")};
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(RunExplain, ProgramsAWatchedProcessExecutesAreWatchedByDefault) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "python3 missing";
  const auto cmd = PythonThatRuns("'" STALL_PROGRAM "', '0', '400'");
  // Default: python3 armed first, and the program it runs is watched too (the runner problem:
  // npm, make, ctest reach their own loop before the program they start).
  const auto r =
      RunCommand(Concat({kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--"}, cmd));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: watched 2 processes:")) << r.err;
  EXPECT_TRUE(Has(r.err, "stall_program (" STALL_PROGRAM "): 1 hang")) << r.err;
  EXPECT_FALSE(Has(r.err, "without hangwatch")) << r.err;
  // --inherit is still accepted: the same.
  const auto inherit = RunCommand(
      Concat({kCli, "run", "--inherit", "--threshold-ms", "100", "--fail-on-hang", "--"}, cmd));
  EXPECT_EQ(inherit.exit_code, 3) << inherit.err;

  // --no-inherit: the old rule. The stall is not seen, and the summary says why.
  const auto no = RunCommand(
      Concat({kCli, "run", "--no-inherit", "--threshold-ms", "100", "--fail-on-hang", "--"}, cmd));
  EXPECT_EQ(no.exit_code, 0) << no.err;
  EXPECT_TRUE(Has(no.err, "hangwatch run: watched 1 process:")) << no.err;
  EXPECT_TRUE(Has(no.err, "hangwatch run: python3 executed `" STALL_PROGRAM
                          " 0 400` without hangwatch; it was not watched (the launch rule: "
                          "--no-inherit)\n"))
      << no.err;
}

TEST(RunExplain, LaunchTreeGivesEveryReasonAProcessWasNotWatched) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "python3 missing";
  TempDir dir;
  // A set-user-ID copy of a dynamic program, owned by nobody: run by root, it is a
  // secure-execution program, for which the dynamic linker ignores LD_PRELOAD.
  const std::string setuid = dir / "setuid_true";
  ASSERT_EQ(std::system(("cp /bin/true " + setuid).c_str()), 0);
  const bool can_setuid = getuid() == 0 && chown(setuid.c_str(), 65534, 65534) == 0 &&
                          chmod(setuid.c_str(), 04755) == 0 && chmod(dir.path().c_str(), 0755) == 0;
  const std::string no_signal =
      "/usr/bin/python3 -c 'import signal, select\n"
      "for s in range(signal.SIGRTMIN, signal.SIGRTMAX + 1): signal.signal(s, lambda *a: None)\n"
      "select.select([], [], [], 0.05)'";
  const std::string script =
      absl::StrCat(STATIC_PROGRAM " 0; env -i " STALL_PROGRAM " 0 0; ",
                   can_setuid ? setuid + "; " : "", no_signal, "; ", kPython,
                   " -c 'import select, subprocess\nselect.select([], [], [], 0.05)\n"
                   "subprocess.call([\"" STALL_PROGRAM "\", \"0\", \"0\"])'; exit 0");
  const auto r =
      RunCommand({kCli, "run", "--no-inherit", "--explain", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t tree = r.err.find(
      "hangwatch run: launch tree (every process that loaded the shim, under its parent):\n");
  ASSERT_NE(tree, std::string::npos) << r.err;
  const std::string t = r.err.substr(tree);
  EXPECT_TRUE(Has(t, "hangwatch run:   pid ")) << t;
  EXPECT_TRUE(Has(t, " sh (/usr/bin/dash): ")) << t;
  EXPECT_TRUE(Has(t, ": executed `" STATIC_PROGRAM " 0` (" STATIC_PROGRAM
                     "), which did not load the shim (a statically linked program: nothing can "
                     "be preloaded into it): not watched\n"))
      << t;
  EXPECT_TRUE(Has(t, "env (/usr/bin/env): executed `" STALL_PROGRAM
                     " 0 0` with its environment cleared (no LD_PRELOAD with the shim): not "
                     "watched\n"))
      << t;
  if (can_setuid) {
    EXPECT_TRUE(Has(t, "which did not load the shim (a set-user-ID or set-group-ID program")) << t;
  }
  EXPECT_TRUE(Has(t,
                  "python3 (/usr/bin/python3.11): could not be watched: hangwatch: no free "
                  "real-time signal"))
      << t;
  EXPECT_TRUE(Has(t, "python3 (/usr/bin/python3.11): watched\n")) << t;
  EXPECT_TRUE(Has(t, ": executed `" STALL_PROGRAM
                     " 0 0` without the shim (the launch rule: --no-inherit): not watched\n"))
      << t;
  // The summary names what ran without the shim, above the tree.
  const std::string summary = r.err.substr(0, tree);
  EXPECT_TRUE(Has(summary, "hangwatch run: env executed `" STALL_PROGRAM
                           " 0 0` without hangwatch; it was not watched (its environment was "
                           "cleared of the shim)\n"))
      << summary;
  EXPECT_TRUE(Has(summary, "hangwatch run: python3 executed `" STALL_PROGRAM
                           " 0 0` without hangwatch; it was not watched (the launch rule: "
                           "--no-inherit)\n"))
      << summary;

  // Nothing watched: the tree after the one line, and a command that did not load the shim.
  const auto s = RunCommand({kCli, "run", "--explain", "--", STATIC_PROGRAM, "0"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(Has(s.err, "hangwatch run: no process was watched: static_program did not load"))
      << s.err;
  EXPECT_TRUE(Has(s.err, "\nhangwatch run:   pid ")) << s.err;
  EXPECT_TRUE(Has(s.err, " static_program: did not load the shim (a statically linked")) << s.err;
  // A shell that only runs builtins never waited for events.
  const auto b = RunCommand({kCli, "run", "--explain", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_TRUE(Has(b.err, " sh (/usr/bin/dash): never waited for events\n")) << b.err;
}

// Kills the process whose pid is in `pid_file` when the test ends, if it still lives.
class KillFromPidFile {
 public:
  explicit KillFromPidFile(std::string pid_file) : pid_file_(std::move(pid_file)) {}
  ~KillFromPidFile() {
    const std::string text = ReadFile(pid_file_);
    if (text.empty()) return;
    const pid_t pid = static_cast<pid_t>(std::stol(text));
    const uint64_t start = tools::ReadProcStat(pid).start_time;
    kill(pid, SIGKILL);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (tools::IsAlive(pid, start) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    tools::RemoveStaleRunDirs("/tmp");  // its run directory, now that it is gone
  }

 private:
  std::string pid_file_;
};

TEST(RunExplain, QuietKeepsOnlyWhatNeedsActionNotTheDaemonBlock) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "python3 missing";
  TempDir dir;
  // sh starts a watched python3 in the background and exits: it still runs after the command.
  auto daemon = [&](const std::string& pid_file) {
    return std::vector<std::string>{
        "/bin/sh", "-c",
        absl::StrCat(kPython, " -c 'import os, select\nopen(\"", pid_file,
                     "\", \"w\").write(str(os.getpid()))\nselect.select([], [], [], 60)' &")};
  };

  {
    KillFromPidFile guard(dir / "loud.pid");
    const auto loud = RunCommand(Concat({kCli, "run", "--"}, daemon(dir / "loud.pid")));
    EXPECT_EQ(loud.exit_code, 0) << loud.err;
    EXPECT_TRUE(Has(loud.err, "hangwatch run: still running after /bin/sh ended: pid "))
        << loud.err;
  }
  KillFromPidFile guard(dir / "quiet.pid");
  const auto quiet = RunCommand(Concat({kCli, "run", "--quiet", "--"}, daemon(dir / "quiet.pid")));
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "") << "a healthy run under --quiet prints nothing";
}

TEST(RunExplain, ReportThatNothingWroteIsNotLeftBehind) {
  TempDir dir;
  const std::string report = dir / "h.jsonl";
  const auto r = RunCommand({kCli, "run", "--report", report, "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  EXPECT_NE(lstat(report.c_str(), &st), 0) << "an empty report would look like a clean one";
  EXPECT_TRUE(Has(r.err, absl::StrCat("hangwatch run: no report: ", report,
                                      " was not created (nothing was watched)\n")))
      << r.err;
  // A report that was there before is left as it was, even empty.
  WriteFile(report, "");
  const auto again = RunCommand({kCli, "run", "--report", report, "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(lstat(report.c_str(), &st), 0);
  EXPECT_FALSE(Has(again.err, "no report")) << again.err;
  // Something watched: the report is there (its lag records).
  const std::string watched = dir / "w.jsonl";
  const auto w = RunCommand({kCli, "run", "--report", watched, "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(lstat(watched.c_str(), &st), 0) << w.err;
}

// A wrapper, like xvfb-run: starts a helper in the background (python3, which waits for events:
// watched), runs its arguments and returns their status, then stops the helper. The program
// it runs waits until the helper has armed (the launch log says so), then exits.
TEST(RunExplain, WrappersHelperWatchedIsNotTheProgram) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "python3 missing";
  const std::string wait_armed = absl::StrCat(
      "i=0; until grep -q '^armed ' \"$HANGWATCH_OPEN_HANG_DIR/", tools::kLaunchLogFile,
      "\"; do i=$((i+1)); [ $i -gt 500 ] && exit 9; sleep 0.02; done");
  const std::vector<std::string> wrapper = {
      "/bin/sh",
      "-c",
      "/usr/bin/python3 -c 'import select; select.select([], [], [], 30)' & h=$!; \"$@\"; s=$?; "
      "kill $h; wait $h; exit $s",
      "wrapper",
      "/bin/sh",
      "-c",
      wait_armed};
  TempDir dir;
  const std::string junit = dir / "junit.xml";
  const auto r =
      RunCommand(Concat({kCli, "run", "--fail-on-hang", "--junit", junit, "--"}, wrapper));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  // run's first line (the wrapper's shell said "Terminated" of its helper before it).
  ASSERT_NE(r.err.find("hangwatch run: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hangwatch run: the program was not watched: sh (run by sh) never waited "
                       "for events; "),
            r.err.find("hangwatch run: "))
      << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: no hangs in the helpers of /bin/sh")) << r.err;
  EXPECT_TRUE(Has(r.err, "python3 (")) << r.err;
  EXPECT_TRUE(Has(r.err, "): no hangs, a helper, not the program\n")) << r.err;
  EXPECT_TRUE(Has(ReadFile(junit),
                  "type=\"not-watched\" message=\"the program was not watched: sh "
                  "(run by sh) never waited for events"))
      << ReadFile(junit);
  // The gate flags: the same status.
  const auto gate = RunCommand(Concat({kCli, "run", "--max-hangs", "0", "--"}, wrapper));
  EXPECT_EQ(gate.exit_code, 4) << gate.err;
  // Without --fail-on-hang: the program's status.
  const auto plain = RunCommand(
      {kCli, "run", "--", "/bin/sh", "-c", "\"$@\"", "wrapper", "/bin/sh", "-c", "exit 5"});
  EXPECT_EQ(plain.exit_code, 5) << plain.err;
}

// A runner (make check, bash tests.sh) is the program: the tests it runs are processes it
// started, and one of them watched is enough.
TEST(RunExplain, RunnerWhoseTestWasWatchedPasses) {
  TempDir dir;
  WriteFile(dir / "tests.sh", absl::StrCat(STALL_PROGRAM, " 0 0\ntrue\n"));
  const auto r = RunCommand({kCli, "run", "--fail-on-hang", "--", "/bin/sh", dir / "tests.sh"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: watched 1 process:")) << r.err;
  EXPECT_FALSE(Has(r.err, "not the program")) << r.err;
  EXPECT_FALSE(Has(r.err, "not watched")) << r.err;
}

}  // namespace
}  // namespace hangwatch::testing
