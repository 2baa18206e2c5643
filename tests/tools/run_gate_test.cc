// `hangwatch run` with the gate flags: the run's own report judged against a baseline, an allow
// list and budgets; exit 3 only when the gate fails, the command's status otherwise; the gate's
// JUnit (one test per signature, named after the culprit); bad gate input stops the run before
// the command starts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// `hangwatch run` on stall_program (exit status `exit`, a stall of `stall_ms`) with `flags`.
CommandResult RunStall(const std::vector<std::string>& flags, const std::string& exit,
                       const std::string& stall_ms) {
  std::vector<std::string> argv = {kCli, "run", "--threshold-ms", "100", "--sample-ms", "10"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", STALL_PROGRAM, exit, stall_ms});
  return RunCommand(argv);
}

// stall_program stalling on its way out (`mode` "exit": main returns after the stall, "_exit":
// it calls _exit()), under `hangwatch run` with `flags`.
CommandResult RunStallAtExit(const std::vector<std::string>& flags, const std::string& mode) {
  std::vector<std::string> argv = {kCli, "run", "--threshold-ms", "100", "--sample-ms", "10"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", STALL_PROGRAM, "0", "500", mode});
  return RunCommand(argv);
}

// A pass the process's exit ends is its own shutdown work: a shutdown-phase hang, shown
// everywhere, judged by --fail-on-hang and the gate only with --judge-shutdown (gunicorn's
// master reported its graceful shutdown as a hang and failed --fail-on-hang).
TEST(RunShutdownPhase, AStallOnTheWayOutFailsOnlyWithJudgeShutdown) {
  for (const std::string mode : {"exit", "_exit"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const std::string report = dir / "r.jsonl";
    const auto run = RunStallAtExit({"--fail-on-hang", "--report", report}, mode);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(Has(run.err, "1 of them in the shutdown phase")) << run.err;
    EXPECT_TRUE(Has(run.err, "shutdown-phase ")) << run.err;
    tools::Report r;
    std::string error;
    ASSERT_TRUE(tools::ReadReportFile(report, &r, &error)) << error;
    ASSERT_EQ(r.hangs.size(), 1u) << ReadFile(report);
    EXPECT_EQ(r.hangs[0].phase, HangPhase::kShutdown);
    EXPECT_GE(r.hangs[0].duration_ms, 500u) << "measured by the process: the whole stall";
    EXPECT_TRUE(Has(ReadFile(report), "\"phase\":\"shutdown\"")) << ReadFile(report);
    ASSERT_FALSE(r.lags.empty());

    const auto judged = RunStallAtExit({"--fail-on-hang", "--judge-shutdown"}, mode);
    EXPECT_EQ(judged.exit_code, 3) << judged.err;

    // The gate on the report: the same rule.
    const auto gate = RunCommand({kCli, "gate", report});
    EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;
    EXPECT_TRUE(Has(gate.out, "1 shutdown-phase hang (")) << gate.out;
    const auto gate_json = RunCommand({kCli, "gate", "--format", "json", report});
    EXPECT_TRUE(Has(gate_json.out, "\"shutdown_hangs\": 1")) << gate_json.out;
    const auto gate_judged = RunCommand({kCli, "gate", "--judge-shutdown", report});
    EXPECT_EQ(gate_judged.exit_code, 3) << gate_judged.out << gate_judged.err;
    const auto text = RunCommand({kCli, "report", report});
    EXPECT_TRUE(Has(text.out, "Phase:            shutdown")) << text.out;
  }
}

// The same stall inside the loop is a run-phase hang: --fail-on-hang fails.
TEST(RunShutdownPhase, TheSameStallInTheLoopStillFails) {
  const auto run = RunStall({"--fail-on-hang"}, "0", "500");
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_FALSE(Has(run.err, "shutdown")) << run.err;
}

TEST(RunGate, BaselineMakesTheStallKnownAndTheRunPasses) {
  TempDir dir;
  // The baseline: an earlier run of the same stall.
  const auto first = RunStall({"--report", dir / "base.jsonl"}, "0", "500");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  tools::Report base;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "base.jsonl", &base, &error)) << error;
  ASSERT_EQ(base.hangs.size(), 1u);

  const auto known =
      RunStall({"--baseline", dir / "base.jsonl", "--junit", dir / "junit.xml"}, "0", "500");
  EXPECT_EQ(known.exit_code, 0) << known.err;
  EXPECT_TRUE(Has(known.err, "hangwatch run: gate PASSED")) << known.err;
  EXPECT_TRUE(Has(known.err, "hangwatch run: known hangs (in the baseline): 1")) << known.err;
  EXPECT_TRUE(Has(known.err, "hangwatch run:   StallTheMainThread")) << known.err;
  const auto v =
      RunCommand({"/usr/bin/xmllint", "--noout", "--schema", JUNIT_XSD, dir / "junit.xml"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const std::string junit = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(junit, "name=\"hang in StallTheMainThread\"")) << junit;
  EXPECT_TRUE(Has(junit, "failures=\"0\"")) << junit;

  // The gate passing keeps the command's own status.
  const auto five = RunStall({"--baseline", dir / "base.jsonl"}, "5", "500");
  EXPECT_EQ(five.exit_code, 5) << five.err;
}

TEST(RunGate, NewStallFailsWithThreeUnlessAllowedOrWithinBudget) {
  TempDir dir;
  const auto fail = RunStall({"--max-hangs", "0", "--junit", dir / "junit.xml"}, "0", "500");
  EXPECT_EQ(fail.exit_code, 3) << fail.err;
  EXPECT_TRUE(Has(fail.err, "hangwatch run: gate FAILED (1 violation)")) << fail.err;
  const std::string junit = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(junit, "name=\"hang in StallTheMainThread\"")) << junit;
  EXPECT_TRUE(Has(junit, "failures=\"2\"")) << junit;  // the hang and the --max-hangs budget

  const auto within = RunStall({"--max-hang-ms", "60000"}, "0", "500");
  EXPECT_EQ(within.exit_code, 0) << within.err;

  WriteFile(dir / "allow.txt", "Stall* # the test's deliberate stall\n");
  const auto allowed =
      RunStall({"--allow", dir / "allow.txt", "--markdown", dir / "s.md"}, "0", "500");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_TRUE(Has(allowed.err, "allowed (line 1: the test's deliberate stall)")) << allowed.err;
  EXPECT_TRUE(Has(ReadFile(dir / "s.md"), "allowed: the test's deliberate stall"));
}

TEST(RunGate, LagBudgetFailsWhenItCannotBeMetOrChecked) {
  // A 500 ms pass: either the run has lag records and its p99 is far over 100 ms, or it has
  // none and the budget cannot be checked. Both fail the gate.
  const auto r = RunStall({"--max-p99-ms", "100"}, "0", "500");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "p99 pass duration") || Has(r.err, "no lag records")) << r.err;
}

TEST(RunGate, NothingWatchedIsFourNotAPass) {
  TempDir dir;
  const auto r = RunCommand({kCli, "run", "--max-hangs", "0", "--markdown", dir / "s.md",
                             "--github", "--", STATIC_PROGRAM});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(Has(r.err, "no process was watched")) << r.err;
  EXPECT_TRUE(Has(ReadFile(dir / "s.md"), "nothing was gated")) << ReadFile(dir / "s.md");
  EXPECT_TRUE(Has(r.out, "::error title=hangwatch%3A nothing watched::")) << r.out;
}

TEST(RunGate, BadGateInputStopsTheRunBeforeTheCommandStarts) {
  TempDir dir;
  WriteFile(dir / "allow.txt", "Stall*\n");
  WriteFile(dir / "empty.jsonl", "");
  for (const auto& [flags, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--allow", dir / "allow.txt"}, "malformed allow file"},
           {{"--baseline", dir / "empty.jsonl"}, "is empty"},
           {{"--baseline", dir / "none.jsonl"}, "No such file"},
           {{"--max-slow-passes", "17:1"}, "--max-slow-passes wants MS:N"}}) {
    std::vector<std::string> all = flags;
    all.insert(all.end(), {"--report", dir / "report.jsonl"});
    const auto r = RunStall(all, "0", "300");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(Has(r.err, message)) << r.err;
    EXPECT_FALSE(Exists(dir / "report.jsonl")) << "the command ran";
  }
}

}  // namespace
}  // namespace hangwatch::testing
