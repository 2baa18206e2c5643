// `hangwatch run` as a CI gate: exit 3 under --fail-on-hang when the program stalled, its own
// status otherwise (128+N for a signal), the hang summarized on stderr, JSON Lines and JUnit XML
// (validated against junit.xsd) written; bad usage is one line and exit 2. Never a silent green:
// every watched process is listed, a run that watched nothing says why and exits 4 under
// --fail-on-hang, unwritable outputs stop the run before the command starts, a failing command
// is named. Run directories: kept while a process of the run lives, stale ones removed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

#include "cli_util.h"
#include "tools/reader/report_reader.h"
#include "tools/run/run_dir.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

TEST(RunCommand, StallingProgramFailsWithThreeAndNamesTheCulprit) {
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10",
                             "--fail-on-hang", "--report", dir / "hangs.jsonl", "--junit",
                             dir / "junit.xml", "--", STALL_PROGRAM, "0", "600"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: 1 hang in " STALL_PROGRAM)) << r.err;
  EXPECT_TRUE(Has(r.err, "#0  stall_program")) << r.err;
  EXPECT_TRUE(Has(r.err, "StallTheMainThread")) << r.err;

  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "hangs.jsonl", &report, &error)) << error;
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_GE(report.hangs[0].duration_ms, 500u);
  EXPECT_EQ(report.hangs[0].dominant()->frames[0].symbol, "StallTheMainThread");

  ExpectValidJunit(dir / "junit.xml");
  const std::string junit = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(junit, "failures=\"1\"")) << junit;
  EXPECT_TRUE(Has(junit, "in StallTheMainThread")) << junit;
  EXPECT_TRUE(Has(junit, report.hangs[0].fingerprint)) << junit;
}

TEST(RunCommand, WithoutFailOnHangTheProgramsStatusIsKept) {
  const auto r =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--", STALL_PROGRAM, "5", "400"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_TRUE(Has(r.err, "StallTheMainThread")) << r.err;
}

TEST(RunCommand, HealthyProgramKeepsItsOwnStatus) {
  TempDir dir;
  const auto ok = RunCommand({kCli, "run", "--threshold-ms", "200", "--fail-on-hang", "--junit",
                              dir / "junit.xml", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(Has(ok.err, "no hangs")) << ok.err;
  ExpectValidJunit(dir / "junit.xml");
  EXPECT_TRUE(Has(ReadFile(dir / "junit.xml"), "failures=\"0\""));
  const auto seven = RunCommand({kCli, "run", "--fail-on-hang", "--", STALL_PROGRAM, "7", "0"});
  EXPECT_EQ(seven.exit_code, 7) << seven.err;
}

TEST(RunCommand, KilledBySignalIs128PlusN) {
  const auto r = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0", "kill"});
  EXPECT_EQ(r.exit_code, 128 + 15) << r.err;
}

TEST(RunCommand, HangThatKillsTheProcessIsReportedFatal) {
  TempDir dir;
  const auto r =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10", "--fail-on-hang",
                  "--report", dir / "hangs.jsonl", "--", STALL_PROGRAM, "0", "900", "die"},
                 {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "FATAL")) << r.err;
  EXPECT_TRUE(Has(r.err, "StallTheMainThread")) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "hangs.jsonl", &report, &error)) << error;
  ASSERT_EQ(report.hangs.size(), 1u) << "the fatal hang is added to the report file";
  EXPECT_TRUE(report.hangs[0].fatal);
  EXPECT_GE(report.hangs[0].duration_ms, 300u);
  // Without --fail-on-hang: the status of the killed program.
  const auto killed =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--", STALL_PROGRAM, "0", "900", "die"},
                 {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  EXPECT_EQ(killed.exit_code, 128 + 9) << killed.err;
}

// A process that exits in the middle of a pass through the raw exit_group system call (Go's
// os.Exit does that), which no exit hook of the shim sees, leaves its open-hang file behind. It
// exited with a status: the hang did not kill it, the pass ended with the process. A
// shutdown-phase hang, never FATAL, not judged by --fail-on-hang.
TEST(RunCommand, OpenHangOfAProcessThatExitedIsAShutdownHangNotAFatalOne) {
  TempDir dir;
  const auto r =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10", "--fail-on-hang",
                  "--report", dir / "hangs.jsonl", "--", STALL_PROGRAM, "0", "600", "exit_group"},
                 {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Has(r.err, "FATAL")) << r.err;
  EXPECT_TRUE(Has(r.err, "in the shutdown phase")) << r.err;
  EXPECT_TRUE(Has(r.err, "StallTheMainThread")) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "hangs.jsonl", &report, &error)) << error;
  ASSERT_EQ(report.hangs.size(), 1u) << "the open hang is added to the report file";
  EXPECT_FALSE(report.hangs[0].fatal);
  EXPECT_EQ(report.hangs[0].phase, HangPhase::kShutdown);
  EXPECT_GE(report.hangs[0].duration_ms, 300u);
}

// JIT code that its runtime names only when it exits (the JVM's DumpPerfMapAtExit): the record
// cannot name it, `run` and `report` read the map that is there afterwards, and a map older than
// the hang (an earlier process with the same pid) is not believed.
TEST(RunCommand, JitCodeIsNamedFromAPerfMapWrittenAtExit) {
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10", "--report",
                             dir / "hangs.jsonl", "--", JIT_PROGRAM, "600"},
                            {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  if (r.exit_code == 77) GTEST_SKIP() << "jit_program generates x86-64 code only";
  // Its map is removed whatever happens next (jit_program prints its pid first).
  int pid = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "jit_program pid %d", &pid), 1) << r.out << r.err;
  const std::string map = "/tmp/perf-" + std::to_string(pid) + ".map";
  struct RemoveMap {
    std::string path;
    ~RemoveMap() { unlink(path.c_str()); }
  } remove_map{map};
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "hangs.jsonl", &report, &error)) << error << r.err;
  ASSERT_EQ(report.hangs.size(), 1u) << r.err;
  const HangRecord& hang = report.hangs[0];
  EXPECT_EQ(hang.pid, pid);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(hang.culprit.symbol.empty()) << "the record was written before the map";
  ASSERT_EQ(access(map.c_str(), F_OK), 0) << "jit_program wrote no map";
  EXPECT_TRUE(Has(r.err, "Loop.busyFor")) << r.err;

  const auto named = RunCommand({kCli, "report", dir / "hangs.jsonl"});
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(Has(named.out, "Loop.busyFor")) << named.out;

  // The same map, last written a minute before the hang began: another process's.
  const int64_t old_ms = hang.start_unix_ms - 60000;
  const struct timespec times[2] = {{old_ms / 1000, (old_ms % 1000) * 1000000},
                                    {old_ms / 1000, (old_ms % 1000) * 1000000}};
  ASSERT_EQ(utimensat(AT_FDCWD, map.c_str(), times, 0), 0);
  const auto stale = RunCommand({kCli, "report", dir / "hangs.jsonl"});
  EXPECT_EQ(stale.exit_code, 0) << stale.err;
  EXPECT_FALSE(Has(stale.out, "Loop.busyFor")) << stale.out;
}

TEST(RunCommand, ReportFileIsAppendedAndOnlyThisRunIsSummarized) {
  TempDir dir;
  const std::string report = dir / "hangs.jsonl";
  for (int i = 0; i < 2; ++i) {
    const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", report, "--",
                               STALL_PROGRAM, "0", "300"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Has(r.err, "1 hang in")) << "run " << i << ": " << r.err;
  }
  tools::Report all;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(report, &all, &error)) << error;
  EXPECT_EQ(all.hangs.size(), 2u);
}

TEST(RunCommand, BadUsageIsOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"--threshold-ms", "0", "--", STALL_PROGRAM, "0", "0"},
      {"--threshold-ms", "abc", "--", STALL_PROGRAM, "0", "0"},
      {"--sample-ms", "500", "--threshold-ms", "100", "--", STALL_PROGRAM, "0", "0"},
      {"--bogus", "--", STALL_PROGRAM},
      {"--report"},
  };
  for (auto args : cases) {
    args.insert(args.begin(), {kCli, "run"});
    const auto r = RunCommand(args);
    EXPECT_EQ(r.exit_code, 2) << args.size() << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  }
  // A missing shim is a clear error too.
  const auto r = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"},
                            {"HANGWATCH_PRELOAD_LIB=/nonexistent/libhangwatch_preload.so"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "HANGWATCH_PRELOAD_LIB=/nonexistent/libhangwatch_preload.so is not"))
      << r.err;
}

// The agent library the shim loads from its own directory.
std::string AgentLibraryOf(const std::string& shim) {
  return shim.substr(0, shim.rfind('/') + 1) + "libhangwatch_preload_agent.so";
}

// A copy of the shim (or of another file: `from`) at `path` (removed again by the destructor).
class ShimCopy {
 public:
  explicit ShimCopy(std::string path, const std::string& from = PRELOAD_SHIM)
      : path_(std::move(path)) {
    WriteFile(path_, ReadFile(from));
    chmod(path_.c_str(), 0755);
  }
  ~ShimCopy() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The shim is loaded into every process of the command, as root under sudo: a sudoers env_keep
// that passes HANGWATCH_* must not let the caller choose the library.
TEST(RunCommand, PreloadLibOnlyFromTheInstallationAndOnlyIfNoOneElseCanWriteIt) {
  auto run = [](const std::string& lib) {
    return RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"},
                      {"HANGWATCH_PRELOAD_LIB=" + lib});
  };
  auto refused = [&](const std::string& lib, const std::string& why) {
    const auto r = run(lib);
    EXPECT_EQ(r.exit_code, 2) << lib << ": " << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(Has(r.err, "hangwatch run: HANGWATCH_PRELOAD_LIB=" + lib + " is refused: " + why))
        << r.err;
  };
  // The build tree's own shim, named explicitly, is accepted.
  const auto ok = run(PRELOAD_SHIM);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(Has(ok.err, "watched 1 process")) << ok.err;

  // A library in a directory anyone can write to: refused, wherever it is.
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 01777), 0);
  ShimCopy in_tmp(dir / "libhangwatch_preload.so");
  refused(in_tmp.path(), "the shim is taken only from beside hangwatch");

  // Beside the real shim: accepted while it is ours and not writable by others.
  const std::string shim = PRELOAD_SHIM;
  ShimCopy beside(shim.substr(0, shim.rfind('/')) + "/libhangwatch_preload_copy.so");
  const auto copy_ok = run(beside.path());
  EXPECT_EQ(copy_ok.exit_code, 0) << copy_ok.err;
  ASSERT_EQ(chmod(beside.path().c_str(), 0757), 0);
  refused(beside.path(), beside.path() + " is writable by others");
  ASSERT_EQ(chmod(beside.path().c_str(), 0775), 0);
  refused(beside.path(), beside.path() + " is writable by its group");
  ASSERT_EQ(chmod(beside.path().c_str(), 0755), 0);
  // Another user's library (the tests run as root, or as its owner: chown to nobody).
  if (chown(beside.path().c_str(), 65534, 65534) == 0) {
    refused(beside.path(), beside.path() + " is owned by uid 65534");
  }
}

// An installed layout, PREFIX/bin/hangwatch and PREFIX/lib/libhangwatch_preload.so with its
// agent library beside it: the shim is found in ../lib, and refused when a directory above it
// lets others swap it.
TEST(RunCommand, InstalledShimIsRefusedWhenADirectoryAboveItIsWritableByOthers) {
  TempDir prefix;  // in /tmp: sticky, so others may write there but not rename our directory
  ASSERT_EQ(mkdir((prefix / "bin").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((prefix / "lib").c_str(), 0755), 0);
  const std::string cli = prefix / "bin/hangwatch";
  WriteFile(cli, ReadFile(kCli));
  ASSERT_EQ(chmod(cli.c_str(), 0755), 0);
  ShimCopy shim(prefix / "lib/libhangwatch_preload.so");
  ShimCopy agent(AgentLibraryOf(shim.path()), AgentLibraryOf(PRELOAD_SHIM));
  ASSERT_EQ(chmod(prefix.path().c_str(), 0755), 0);
  auto run = [&] { return RunCommand({cli, "run", "--", STALL_PROGRAM, "0", "0"}); };
  const auto ok = run();
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(Has(ok.err, "watched 1 process")) << ok.err;

  ASSERT_EQ(chmod(prefix.path().c_str(), 0757), 0);
  const auto refused = run();
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.err, "hangwatch run: libhangwatch_preload.so is refused: " + prefix.path() +
                             " is writable by others\n");
  ASSERT_EQ(chmod(prefix.path().c_str(), 0755), 0);

  // Another user's binary and shim (the tests run as root, or as its owner: chown to nobody):
  // whoever owns the binary decides what runs anyway; a third user's shim is refused.
  if (chown(cli.c_str(), 65534, 65534) == 0 && chown(shim.path().c_str(), 65534, 65534) == 0) {
    const auto owner = run();
    EXPECT_EQ(owner.exit_code, 0) << owner.err;
    ASSERT_EQ(chown(shim.path().c_str(), 65533, 65533), 0);
    const auto third = run();
    EXPECT_EQ(third.exit_code, 2) << third.err;
    EXPECT_TRUE(Has(third.err, "is owned by uid 65533")) << third.err;
  }
}

// The shim is two libraries: a loader without the agent library beside it would watch nothing.
// `run` says so in one line before the command starts, and refuses an agent library others can
// change as it refuses such a loader (it is loaded into the same processes).
TEST(RunCommand, InstalledShimWithoutItsAgentLibraryIsOneClearError) {
  TempDir prefix;
  ASSERT_EQ(mkdir((prefix / "bin").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((prefix / "lib").c_str(), 0755), 0);
  ASSERT_EQ(chmod(prefix.path().c_str(), 0755), 0);
  const std::string cli = prefix / "bin/hangwatch";
  WriteFile(cli, ReadFile(kCli));
  ASSERT_EQ(chmod(cli.c_str(), 0755), 0);
  ShimCopy shim(prefix / "lib/libhangwatch_preload.so");
  const std::string marker = prefix / "started";
  auto run = [&] { return RunCommand({cli, "run", "--", "/bin/sh", "-c", "touch " + marker}); };
  const auto missing = run();
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(missing.err, "hangwatch run: " + AgentLibraryOf(shim.path()) +
                             " is not readable (No such file or directory): "
                             "libhangwatch_preload.so loads it from its own directory\n");
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the command ran";

  ShimCopy agent(AgentLibraryOf(shim.path()), AgentLibraryOf(PRELOAD_SHIM));
  ASSERT_EQ(chmod(agent.path().c_str(), 0757), 0);
  const auto writable = run();
  EXPECT_EQ(writable.exit_code, 2) << writable.err;
  EXPECT_EQ(writable.err, "hangwatch run: libhangwatch_preload_agent.so is refused: " +
                              agent.path() + " is writable by others\n");

  ASSERT_EQ(chmod(agent.path().c_str(), 0755), 0);
  const auto ok = run();
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(access(marker.c_str(), F_OK), 0) << ok.err;
}

// An event-loop program in Python for the rotation test: it reaches its loop (select), hangs
// 400 ms, then waits in select() on the FIFO argv[1] (idle, as far as the agent knows) until the
// test writes a byte, hangs 400 ms again and exits.
constexpr char kTwoHangsProgram[] = R"(
import os, select, sys, time
go = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
def hang():
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        pass
select.select([], [], [], 0.05)
hang()
while True:
    ready, _, _ = select.select([go], [], [], 60)
    if not ready:
        sys.exit(9)
    if os.read(go, 1):
        break
hang()
select.select([], [], [], 0.05)
)";

// The hang records of `path` (the lines that start as a hang record does; lag records are
// written too).
size_t HangLines(const std::string& path) {
  const std::string text = ReadFile(path);
  size_t n = 0;
  for (size_t at = 0; (at = text.find("{\"type\":\"hang\"", at)) != std::string::npos; ++at) {
    n += (at == 0 || text[at - 1] == '\n') && text.find('\n', at) != std::string::npos;
  }
  return n;
}

// logrotate (or the agent at its size limit) renames the report to PATH.1 and a new PATH starts
// between two hangs: `run` must count both, not just the one in the new file.
TEST(RunCommand, HangsBeforeARotationOfTheReportAreCounted) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 missing";
  TempDir dir;
  const std::string report = dir / "hangs.jsonl", fifo = dir / "go";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // An earlier run's hang: the report does not start empty.
  ASSERT_EQ(RunCommand({kCli, "run", "--threshold-ms", "100", "--report", report, "--",
                        STALL_PROGRAM, "0", "300"})
                .exit_code,
            0);
  ASSERT_EQ(HangLines(report), 1u);
  const std::string out = dir / "run.out", err = dir / "run.err";
  const pid_t run = fork();
  if (run == 0) {
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(o, 1);
    dup2(e, 2);
    execl(kCli.c_str(), kCli.c_str(), "run", "--threshold-ms", "100", "--fail-on-hang", "--report",
          report.c_str(), "--", "/usr/bin/python3", "-c", kTwoHangsProgram, fifo.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // The first hang is written when the program waits for the go: then rotate.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (HangLines(report) < 2 && std::chrono::steady_clock::now() < deadline) {
    usleep(10000);
  }
  ASSERT_EQ(HangLines(report), 2u) << ReadFile(err);
  ASSERT_EQ(rename(report.c_str(), (report + ".1").c_str()), 0);
  const int go = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(go, 0);
  ASSERT_EQ(write(go, "g", 1), 1);
  close(go);
  int status = 0;
  ASSERT_EQ(waitpid(run, &status, 0), run);
  const std::string run_err = ReadFile(err);
  EXPECT_EQ(HangLines(report), 1u) << "the second hang went to the new file";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status << run_err;
  EXPECT_TRUE(Has(run_err, "hangwatch run: 2 hangs in /usr/bin/python3")) << run_err;
  EXPECT_TRUE(Has(run_err, ": 2 hangs\n")) << run_err;  // the watched process's line
}

// A program whose name is an escape sequence: `run`'s summary shows it escaped.
TEST(RunCommand, SummaryEscapesControlCharactersInNames) {
  TempDir dir;
  const std::string program = dir / "\x1b]0;pwned\x07";
  ASSERT_EQ(symlink(STALL_PROGRAM, program.c_str()), 0);
  const auto r = RunCommand(
      {kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--", program, "0", "300"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  EXPECT_TRUE(Has(r.err, "\\x1b]0;pwned\\x07")) << r.err;
}

TEST(RunCommand, CommandThatCannotRunIs127AndOnlyItsErrorLine) {
  TempDir dir;
  const auto r = RunCommand(
      {kCli, "run", "--fail-on-hang", "--junit", dir / "junit.xml", "--", "/nonexistent/program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err,
            "hangwatch run: cannot execute '/nonexistent/program': No such file or "
            "directory\n");
  // CI still gets a result: the test case is in error.
  ExpectValidJunit(dir / "junit.xml");
  const std::string junit = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(junit, "<error type=\"not-executed\"")) << junit;
  const auto bare = RunCommand({kCli, "run", "--", "no-such-program-anywhere"});
  EXPECT_EQ(bare.exit_code, 127);
  EXPECT_EQ(CountLines(bare.err), 1u) << bare.err;
}

// The line of the summary that lists `pid`, or "".
std::string LineOf(const std::string& err, int64_t pid) {
  std::smatch m;
  const std::regex re("hangwatch run:   pid " + std::to_string(pid) + " [^\n]*");
  return std::regex_search(err, m, re) ? m.str() : "";
}

TEST(RunCommand, SummaryListsEveryWatchedProcess) {
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", dir / "h.jsonl",
                             "--", STALL_PROGRAM, "0", "300"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error;
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_TRUE(Has(r.err, "hangwatch run: watched 1 process:\n")) << r.err;
  EXPECT_EQ(LineOf(r.err, report.hangs[0].pid), "hangwatch run:   pid " +
                                                    std::to_string(report.hangs[0].pid) +
                                                    " stall_program (" STALL_PROGRAM "): 1 hang")
      << r.err;

  // Healthy: listed too, with no hangs.
  const auto ok = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(std::regex_search(
      ok.err, std::regex("hangwatch run:   pid [0-9]+ stall_program \\([^)]*\\): no hangs\n")))
      << ok.err;
}

TEST(RunCommand, ShellWrapperAndPythonAreWatchedWithTheirPids) {
  // sh -c passes the shim on to the program it starts; the program's hang is its own.
  const std::string script = std::string(STALL_PROGRAM) + " 0 300; exit 0";
  const auto sh = RunCommand(
      {kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(sh.exit_code, 3) << sh.err;
  EXPECT_TRUE(std::regex_search(
      sh.err, std::regex("hangwatch run:   pid [0-9]+ stall_program \\([^)]*\\): 1 hang\n")))
      << sh.err;
  EXPECT_TRUE(Has(sh.err, "watched 1 process:")) << "sh itself never waited: " << sh.err;

  // python3 (a symlink to python3.X): named by its argv[0], its executable in parentheses.
  TempDir dir;
  const auto py = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", dir / "h.jsonl",
                              "--", "/usr/bin/python3", "-c",
                              "import select, time\n"
                              "select.select([], [], [], 0.05)\n"
                              "end = time.monotonic() + 0.4\n"
                              "while time.monotonic() < end: pass\n"
                              "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << py.err;
  ASSERT_EQ(report.hangs.size(), 1u);
  EXPECT_TRUE(std::regex_match(LineOf(py.err, report.hangs[0].pid),
                               std::regex(".* python3 \\(/usr/bin/python3[.0-9]*\\): 1 hang")))
      << py.err;
}

TEST(RunCommand, EveryPassIsTimedIntoLagRecordsWithTheUsersLabels) {
  // 41 waits of python3's selectors loop: 40 passes between them, 10 of them 30 ms long (slow
  // passes, not hangs), 30 of them 1 ms. The shim times each one. On a busy machine a pass can
  // last longer than its loop (the process waited for a CPU): the program times its own passes
  // too, and prints how many 1 ms passes took over 8 ms and how many passes took over 40 ms, so
  // that the figures below allow for exactly those.
  TempDir dir;
  const auto py =
      RunCommand({kCli, "run", "--threshold-ms", "500", "--report", dir / "h.jsonl", "--",
                  "/usr/bin/python3", "-c",
                  "import select, time\n"
                  "stretched = over40 = 0\n"
                  "for i in range(40):\n"
                  "  select.select([], [], [], 0.001)\n"
                  "  start = time.monotonic()\n"
                  "  end = start + (0.03 if i % 4 == 0 else 0.001)\n"
                  "  while time.monotonic() < end: pass\n"
                  "  took = time.monotonic() - start\n"
                  "  stretched += i % 4 != 0 and took > 0.008\n"
                  "  over40 += took > 0.04\n"
                  "print(stretched, over40, flush=True)\n"
                  "select.select([], [], [], 0.001)\n"},
                 {"HANGWATCH_LABELS=team=checkout,build=42", "HANGWATCH_LAG_INTERVAL_MS=0"});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  unsigned stretched = 0, over40 = 0;
  ASSERT_EQ(std::sscanf(py.out.c_str(), "%u %u", &stretched, &over40), 2) << py.out;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << py.err;
  EXPECT_TRUE(report.hangs.empty());
  ASSERT_EQ(report.lags.size(), 1u) << "interval 0: one record, at exit";
  const tools::Lag& lag = report.lags[0];
  const LagFigures f = lag.passes.Figures();
  // The interpreter's own waits before the loop (if any) add passes; ours are all there.
  EXPECT_GE(f.passes, 40u);
  EXPECT_LE(f.passes, 45u);
  // The ten 30 ms passes are over 16 ms; a 1 ms pass is only when the machine stretched it.
  EXPECT_GE(f.slow_passes[0], 10u);
  EXPECT_LE(f.slow_passes[0], 12u + stretched);
  EXPECT_LE(f.slow_passes[2], over40) << "none is over 50 ms but those the machine stretched";
  EXPECT_GE(f.max_ms, 29.7);
  EXPECT_GE(f.busy_ms, 10 * 30 + 30 * 1);
  EXPECT_EQ(lag.labels.at("team"), "checkout");
  EXPECT_EQ(lag.labels.at("build"), "42");
  EXPECT_EQ(lag.process_name, "python3");

  // The run's summary and `hangwatch report` show the figures.
  EXPECT_TRUE(std::regex_search(
      py.err, std::regex("hangwatch run:   pid [0-9]+ python3 .*: no hangs\n"
                         "hangwatch run:     lag: [0-9]+ passes \\(busy 0.[0-9] s\\), p50 ")))
      << py.err;
  const auto text = RunCommand({kCli, "report", dir / "h.jsonl"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Has(text.out, "Lag: " + std::to_string(f.passes) + " passes")) << text.out;
}

TEST(RunCommand, ForkedWorkersAreListedEachWithItsHangs) {
  // A prefork server: the parent reaches its loop, then forks two workers; the second stalls.
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", dir / "h.jsonl",
                             "--", "/usr/bin/python3", "-c",
                             "import os, select, time\n"
                             "select.select([], [], [], 0.05)\n"
                             "pids = []\n"
                             "for stall in (0, 0.4):\n"
                             "    pid = os.fork()\n"
                             "    if pid == 0:\n"
                             "        select.select([], [], [], 0.05)\n"
                             "        end = time.monotonic() + stall\n"
                             "        while time.monotonic() < end: pass\n"
                             "        select.select([], [], [], 0.05)\n"
                             "        os._exit(0)\n"
                             "    pids.append(pid)\n"
                             "while pids:\n"  // the parent stays in its loop while the workers run
                             "    select.select([], [], [], 0.02)\n"
                             "    pid, _ = os.waitpid(-1, os.WNOHANG)\n"
                             "    if pid: pids.remove(pid)\n"
                             "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: watched 3 processes:\n")) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << r.err;
  ASSERT_EQ(report.hangs.size(), 1u) << r.err;
  EXPECT_TRUE(Has(LineOf(r.err, report.hangs[0].pid), "python3")) << r.err;
  EXPECT_TRUE(Has(LineOf(r.err, report.hangs[0].pid), ": 1 hang")) << r.err;
  size_t quiet_ones = 0;
  for (size_t at = 0; (at = r.err.find("python3 (", at)) != std::string::npos; ++at) {
    quiet_ones += r.err.compare(r.err.find(')', at), 12, "): no hangs\n") == 0;
  }
  EXPECT_EQ(quiet_ones, 2u) << "the parent and the first worker: " << r.err;
}

TEST(RunCommand, AWorkerThatEndsWithUnderscoreExitStillWritesItsLastLagIntervalAndHang) {
  // A forked worker times 21 passes (five of them 30 ms), then stalls for 0.4 s and leaves with
  // os._exit() in the middle of that pass: no atexit handler runs, and the lag interval (60 s
  // by default) is far from its end. The shim's _exit has the watchdog write both first.
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", dir / "h.jsonl",
                             "--", "/usr/bin/python3", "-c",
                             "import os, select, time\n"
                             "select.select([], [], [], 0.05)\n"
                             "pid = os.fork()\n"
                             "if pid == 0:\n"
                             "    for i in range(20):\n"
                             "        select.select([], [], [], 0.001)\n"
                             "        end = time.monotonic() + (0.03 if i % 4 == 0 else 0.001)\n"
                             "        while time.monotonic() < end: pass\n"
                             "    select.select([], [], [], 0.001)\n"
                             "    end = time.monotonic() + 0.4\n"
                             "    while time.monotonic() < end: pass\n"
                             "    os._exit(0)\n"
                             "while os.waitpid(pid, os.WNOHANG)[0] == 0:\n"
                             "    select.select([], [], [], 0.02)\n"
                             "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << r.err;
  ASSERT_EQ(report.hangs.size(), 1u) << "the worker's last pass: " << r.err;
  const int64_t worker = report.hangs[0].pid;
  EXPECT_GE(report.hangs[0].duration_ms, 350u);
  const tools::Lag* lag = nullptr;
  for (const tools::Lag& l : report.lags) {
    if (l.pid == worker) lag = &l;
  }
  ASSERT_NE(lag, nullptr) << "the worker wrote no lag record: " << r.err;
  const LagFigures f = lag->passes.Figures();
  EXPECT_GE(f.passes, 21u) << "20 passes and the one _exit ended";
  EXPECT_LE(f.passes, 24u);
  EXPECT_GE(f.slow_passes[0], 6u) << "five of 30 ms and the last one";
  EXPECT_GE(f.max_ms, 390.0) << "the pass _exit ended is counted";
}

TEST(RunCommand, AVforkChildsFailedExecDoesNotStopItsParentsWatchdog) {
  // subprocess uses vfork(): the child shares the parent's memory, armed agent included, until
  // its exec fails and it calls _exit. That _exit must leave the parent's watchdog alone: the
  // parent's stall afterwards is still reported.
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--report", dir / "h.jsonl",
                             "--", "/usr/bin/python3", "-c",
                             "import select, subprocess, time\n"
                             "select.select([], [], [], 0.05)\n"
                             "for i in range(3):\n"
                             "    try:\n"
                             "        subprocess.run(['/nonexistent/hangwatch-test'])\n"
                             "    except FileNotFoundError:\n"
                             "        pass\n"
                             "    select.select([], [], [], 0.01)\n"
                             "end = time.monotonic() + 0.4\n"
                             "while time.monotonic() < end: pass\n"
                             "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << r.err;
  ASSERT_EQ(report.hangs.size(), 1u) << r.err;
  EXPECT_GE(report.hangs[0].duration_ms, 350u);
}

TEST(RunCommand, LiveReportReachesRunsStderrEvenWhenItIsAFile) {
  // The shim prints only on a terminal, a pipe or the stderr `run` hands over: here a regular
  // file (RunCommand's), which the shim would not touch on its own.
  const auto r =
      RunCommand({kCli, "run", "--live", "--threshold-ms", "100", "--", STALL_PROGRAM, "0", "300"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "[hangwatch] [warning] hang: ")) << r.err;
}

TEST(RunCommand, WorkersThatExitRemoveTheirOpenHangFiles) {
  // A prefork server's workers arm (each its own open-hang file in the run directory), then
  // leave, outside any hang: half with exit(), half with os._exit(). Each checks that its file
  // was there (exit status); the parent then counts the files left behind by them.
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--", "/usr/bin/python3", "-c",
                             "import os, select, sys\n"
                             "select.select([], [], [], 0.05)\n"
                             "d = os.environ['HANGWATCH_OPEN_HANG_DIR']\n"
                             "pids = []\n"
                             "for i in range(8):\n"
                             "    pid = os.fork()\n"
                             "    if pid == 0:\n"
                             "        select.select([], [], [], 0.05)\n"
                             "        had = os.path.exists(f'{d}/open-hang.{os.getpid()}')\n"
                             "        if i % 2: os._exit(0 if had else 1)\n"
                             "        sys.exit(0 if had else 1)\n"
                             "    pids.append(pid)\n"
                             "armed = sum(os.waitpid(p, 0)[1] == 0 for p in pids)\n"
                             "left = [f for f in os.listdir(d) if f.startswith('open-hang.')\n"
                             "        and int(f[10:]) in pids]\n"
                             "print('armed', armed, 'left', len(left), flush=True)\n"
                             "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "armed 8 left 0\n") << r.err;
}

TEST(RunCommand, HangsTheFullReportFileDidNotTakeAreCountedAndFailTheRun) {
  // The program's file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: EFBIG) ends 100 bytes past
  // the report's end: each hang line goes out in part only, as on a full disk. The two hangs
  // must be counted, named, and fail --fail-on-hang; no torn line may stay in the report.
  TempDir dir;
  const std::string report = dir / "h.jsonl";
  constexpr size_t kLimit = 4 << 20;  // above the open-hang file the program also writes
  const std::string before(kLimit - 100, '\n');
  WriteFile(report, before);
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--report",
                             report, "--", "/usr/bin/python3", "-c",
                             "import resource, select, signal, time\n"
                             "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                             "resource.setrlimit(resource.RLIMIT_FSIZE, (" +
                                 std::to_string(kLimit) + ", " + std::to_string(kLimit) +
                                 "))\n"
                                 "select.select([], [], [], 0.05)\n"
                                 "for _ in range(2):\n"
                                 "    end = time.monotonic() + 0.4\n"
                                 "    while time.monotonic() < end: pass\n"
                                 "    select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(
      Has(r.err, "hangwatch run: 2 hangs could not be written to " + report + ": File too large\n"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: 2 hangs in /usr/bin/python3")) << r.err;
  EXPECT_TRUE(ReadFile(report) == before)
      << "the report changed: " << ReadFile(report).size() - before.size() << " bytes added";
}

TEST(RunCommand, NothingWatchedIsOneLineExitFourAndAJunitError) {
  TempDir dir;
  // python3 never waits for events: it executes a program that exits at once.
  const std::vector<std::string> cmd = {"/usr/bin/python3", "-c",
                                        "import os; os.execv('/usr/bin/true', ['true'])"};
  std::vector<std::string> args = {kCli, "run", "--fail-on-hang", "--junit", dir / "junit.xml",
                                   "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  const auto r = RunCommand(args);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("hangwatch run: no process was watched: ", 0), 0u) << r.err;
  EXPECT_TRUE(Has(r.err, "never waited for events")) << r.err;
  EXPECT_TRUE(Has(r.err, "python3")) << r.err;
  EXPECT_TRUE(Has(r.err, "/usr/bin/true")) << r.err;
  ExpectValidJunit(dir / "junit.xml");
  const std::string junit = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(junit, "errors=\"1\"")) << junit;
  EXPECT_TRUE(Has(junit, "<error type=\"not-watched\" message=\"no process was watched: "))
      << junit;
  EXPECT_FALSE(Has(junit, "never stalled")) << junit;

  // Without --fail-on-hang the command's status, and the same line; --quiet does not hide it.
  std::vector<std::string> plain = {kCli, "run", "--quiet", "--"};
  plain.insert(plain.end(), cmd.begin(), cmd.end());
  const auto p = RunCommand(plain);
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(Has(p.err, "hangwatch run: no process was watched: ")) << p.err;

  // A shell that runs only builtins.
  const auto sh = RunCommand({kCli, "run", "--fail-on-hang", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(sh.exit_code, 4) << sh.err;
  EXPECT_EQ(sh.err, "hangwatch run: no process was watched: sh never waited for events\n");
}

TEST(RunCommand, AgentThatCannotStartIsNamed) {
  // Every real-time signal has a handler: the agent refuses to take one, and says why.
  const auto r = RunCommand({kCli, "run", "--fail-on-hang", "--", "/usr/bin/python3", "-c",
                             "import signal, select\n"
                             "for s in range(signal.SIGRTMIN, signal.SIGRTMAX + 1):\n"
                             "    signal.signal(s, lambda *a: None)\n"
                             "select.select([], [], [], 0.05)\n"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(Has(r.err,
                  "hangwatch run: no process was watched: python3 could not be watched: "
                  "hangwatch: no free real-time signal"))
      << r.err;
}

TEST(RunCommand, StaticProgramIsNamedAsTheReason) {
  const auto r = RunCommand({kCli, "run", "--fail-on-hang", "--", STATIC_PROGRAM, "0"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.err,
            "hangwatch run: no process was watched: static_program did not load the shim (a "
            "statically linked program: nothing can be preloaded into it)\n");
  // Executed by a wrapper that did load it.
  const auto sh = RunCommand({kCli, "run", "--fail-on-hang", "--", "/bin/sh", "-c",
                              std::string("exec ") + STATIC_PROGRAM + " 0"});
  EXPECT_EQ(sh.exit_code, 4) << sh.err;
  EXPECT_TRUE(Has(sh.err, "sh never waited for events; it executed " STATIC_PROGRAM
                          ", which did not load the shim (a statically linked program"))
      << sh.err;
}

TEST(RunCommand, UnwritableOutputsFailBeforeTheCommandStarts) {
  TempDir dir;
  const std::string marker = dir / "ran";
  const std::vector<std::string> cmd = {"--", "/bin/sh", "-c", "touch '" + marker + "'"};
  WriteFile(dir / "file", "x");
  ASSERT_EQ(mkdir((dir / "subdir").c_str(), 0700), 0);
  const std::vector<std::vector<std::string>> cases = {
      {"--report", "/nonexistent/dir/h.jsonl"},
      {"--report", dir / "file/h.jsonl"},
      {"--report", dir / "subdir"},
      {"--junit", "/nonexistent/dir/junit.xml"},
      {"--junit", dir / "subdir"},
      {"--junit", dir / "junit.xml", "--report", "/nonexistent/dir/h.jsonl"},
  };
  for (auto args : cases) {
    args.insert(args.begin(), {kCli, "run", "--fail-on-hang"});
    args.insert(args.end(), cmd.begin(), cmd.end());
    const auto r = RunCommand(args);
    EXPECT_EQ(r.exit_code, 2) << args[3] << ": " << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(Has(r.err, "hangwatch run: cannot write --")) << r.err;
    EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the command must not have run";
  }
  EXPECT_NE(access((dir / "junit.xml").c_str(), F_OK), 0) << "no empty JUnit file left behind";

  // A report that exists is appended to, never truncated by the check.
  WriteFile(dir / "h.jsonl", "previous content\n");
  const auto ok =
      RunCommand({kCli, "run", "--report", dir / "h.jsonl", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ReadFile(dir / "h.jsonl").rfind("previous content\n", 0), 0u);
}

TEST(RunCommand, ReportPathThatIsASymlinkStopsTheRunBeforeAnythingIsCreated) {
  // Another user planted the link where the report will be: nothing may be created through it.
  TempDir dir;
  const std::string victim = dir / "created-through-the-link";
  ASSERT_EQ(symlink(victim.c_str(), (dir / "h.jsonl").c_str()), 0);
  const auto r =
      RunCommand({kCli, "run", "--report", dir / "h.jsonl", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "symbolic link")) << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  struct stat st;
  EXPECT_NE(lstat(victim.c_str(), &st), 0) << "a file was created through the link";
}

TEST(RunCommand, FailingCommandIsNamedUnderFailOnHang) {
  // A hang and a failing program: 3, and the program's status is on stderr.
  const auto both = RunCommand(
      {kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--", STALL_PROGRAM, "5", "400"});
  EXPECT_EQ(both.exit_code, 3) << both.err;
  EXPECT_TRUE(Has(both.err, "hangwatch run: " STALL_PROGRAM " exited with status 5\n")) << both.err;
  // Even with --quiet, since the exit status no longer tells it.
  const auto quiet = RunCommand({kCli, "run", "--quiet", "--threshold-ms", "100", "--fail-on-hang",
                                 "--", STALL_PROGRAM, "5", "400"});
  EXPECT_EQ(quiet.exit_code, 3) << quiet.err;
  EXPECT_EQ(quiet.err, "hangwatch run: " STALL_PROGRAM " exited with status 5\n");
  // No hang: the program's own status, named.
  const auto seven = RunCommand({kCli, "run", "--fail-on-hang", "--", STALL_PROGRAM, "7", "0"});
  EXPECT_EQ(seven.exit_code, 7) << seven.err;
  EXPECT_TRUE(Has(seven.err, "exited with status 7")) << seven.err;
  const auto killed =
      RunCommand({kCli, "run", "--fail-on-hang", "--", STALL_PROGRAM, "0", "0", "kill"});
  EXPECT_EQ(killed.exit_code, 128 + 15) << killed.err;
  EXPECT_TRUE(Has(killed.err, "was killed by signal 15 (SIGTERM)")) << killed.err;
  // Nothing watched and a failing program: 4, both said.
  const auto static_fail = RunCommand({kCli, "run", "--fail-on-hang", "--", STATIC_PROGRAM, "9"});
  EXPECT_EQ(static_fail.exit_code, 4) << static_fail.err;
  EXPECT_TRUE(Has(static_fail.err, "exited with status 9")) << static_fail.err;
}

TEST(RunCommand, RunDirectoryIsRemovedAndStaleOnesAreCleanedUp) {
  // A run directory left by a `run` that was killed: its owner and its processes are gone.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  std::string stale, error;
  ASSERT_TRUE(tools::CreateRunDir("/tmp", "", &stale, &error)) << error;
  WriteFile(stale + "/run.pid", std::to_string(dead) + " 1\n");
  WriteFile(stale + "/launch.log", "armed " + std::to_string(dead) + " 1 2 prog\t\n");
  // One whose owner lives (this test): kept.
  std::string in_use;
  ASSERT_TRUE(tools::CreateRunDir("/tmp", "", &in_use, &error)) << error;

  const auto r = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(access(stale.c_str(), F_OK), 0) << stale << " should have been removed";
  EXPECT_EQ(access(in_use.c_str(), F_OK), 0);
  EXPECT_FALSE(Has(r.err, "kept")) << "nothing of this run still runs: " << r.err;
  tools::RemoveRunDir(in_use);
}

}  // namespace
}  // namespace hangwatch::testing
