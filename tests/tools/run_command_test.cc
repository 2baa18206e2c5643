// `hangwatch run` as a CI gate: exit 3 under --fail-on-hang when the program stalled, its own
// status otherwise (128+N for a signal), the hang summarized on stderr, JSON Lines and JUnit XML
// (validated against junit.xsd) written; bad usage is one line and exit 2.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"
#include "tools/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

void ExpectValidJunit(const std::string& path) {
  const auto v = RunCommand({"/usr/bin/xmllint", "--noout", "--schema", JUNIT_XSD, path});
  EXPECT_EQ(v.exit_code, 0) << v.err << ReadFile(path);
}

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

TEST(RunCommand, CommandThatCannotRunIs127) {
  const auto r = RunCommand({kCli, "run", "--", "/nonexistent/program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_TRUE(Has(r.err, "cannot execute '/nonexistent/program'")) << r.err;
}

}  // namespace
}  // namespace hangwatch::testing
