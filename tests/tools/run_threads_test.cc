// `hangwatch run --threads`: the value is checked before the command starts (one line, exit 2,
// the command never runs), passed on as HANGWATCH_THREADS, and the loop threads a process left
// out because every slot was taken are counted in the summary (the shim's `leftout` lines of the
// launch log), never a silent gap; a loop thread's fatal hang is read back from its own
// open-hang file (open-hang.PID.tN). The program: tests/integrations/preload_threads_fixture.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "cli_util.h"
#include "tools/reader/report_reader.h"
#include "tools/run/launch_log_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

TEST(RunThreads, BadValuesAreOneLineAndExit2BeforeTheCommandStarts) {
  TempDir dir;
  const std::string marker = dir / "ran";
  for (const char* bad : {"", ",", "io-*,", "loops,gdbus", "a-thread-name-too-long"}) {
    const CommandResult r =
        RunCommand({kCli, "run", std::string("--threads=") + bad, "--", "/usr/bin/touch", marker});
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
    EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the command ran for '" << bad << "'";
  }
  const CommandResult help = RunCommand({kCli, "run", "--help"});
  EXPECT_NE(help.out.find("--threads WHICH"), std::string::npos);
}

TEST(RunThreads, LoopsReportsTheLoopThreadUnderItsName) {
  TempDir dir;
  const CommandResult r = RunCommand({kCli, "run", "--threshold-ms", "150", "--threads", "loops",
                                      "--report", dir / "hangs.jsonl", "--", RUN_THREADS_FIXTURE});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("2 hangs in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("thread io-stall"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("thread io-nested"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lag of thread io-calm"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("helper-once"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("resolver"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not watched"), std::string::npos) << r.err;
}

TEST(RunThreads, MainIsTheDefault) {
  const CommandResult r =
      RunCommand({kCli, "run", "--threshold-ms", "150", "--", RUN_THREADS_FIXTURE});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no hangs"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("lag of thread"), std::string::npos) << r.err;
}

// 70 more loop threads than the fixture's own: 64 slots, so at least 8 are left out and said.
TEST(RunThreads, ThreadsLeftOutAreCountedPerProcess) {
  const CommandResult r = RunCommand({kCli, "run", "--threshold-ms", "150", "--threads", "loops",
                                      "--", RUN_THREADS_FIXTURE, "--extra", "70"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find(" loop threads not watched");
  ASSERT_NE(at, std::string::npos) << r.err;
  const size_t start = r.err.rfind(' ', at - 1) + 1;
  const int left_out = std::stoi(r.err.substr(start, at - start));
  EXPECT_GE(left_out, 5) << r.err;  // 9 once all have qualified, before the run ends
  EXPECT_LE(left_out, 9) << r.err;  // 73 loop threads (io-*, loop-N) for 64 slots
}

// The process is killed 250 ms into io-stall's slow pass: the thread's open-hang file in the run
// directory (open-hang.PID.tN) is read back as a fatal hang of that thread.
TEST(RunThreads, FatalHangOfALoopThreadIsReadBackAfterKill9) {
  TempDir dir;
  const std::string report_path = dir / "hangs.jsonl";
  const CommandResult r =
      RunCommand({kCli, "run", "--threshold-ms", "100", "--threads", "loops", "--report",
                  report_path, "--", RUN_THREADS_FIXTURE, "--die-in-stall", "1"});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("FATAL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("thread io-stall"), std::string::npos) << r.err;
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  EXPECT_TRUE(report.hangs[0].fatal);
  EXPECT_EQ(report.hangs[0].thread_role, "io-stall");
  EXPECT_GE(report.hangs[0].duration_ms, 150u);
}

// _exit() with every loop thread watched and looping: no thread's open-hang file is left for
// run to take for a fatal hang.
TEST(RunThreads, ExitWithLoopThreadsWatchedLeavesNoFatalHang) {
  const CommandResult r = RunCommand({kCli, "run", "--threshold-ms", "150", "--threads", "loops",
                                      "--", RUN_THREADS_FIXTURE, "--exit", "_exit"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("FATAL"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("died during"), std::string::npos) << r.err;
}

TEST(RunThreads, LaunchLogCountsLeftOutThreads) {
  const tools::LaunchLog log = tools::ParseLaunchLog(
      "load 10 1 500 prog\t/bin/prog\n"
      "armed 10 1 500 prog\t\n"
      "leftout 10 1 500 prog\tloop-64\n"
      "leftout 10 1 500 prog\tloop-65\n"
      "leftout 11 1 600 other\tx\n");
  EXPECT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.processes.size(), 2u);
  EXPECT_EQ(log.processes[0].threads_left_out, 2u);
  EXPECT_EQ(log.processes[1].threads_left_out, 1u);
}

}  // namespace
}  // namespace hangwatch::testing
