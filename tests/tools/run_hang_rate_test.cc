// The hang rate (tools/reader/hang_rate.h) in `hangwatch run`'s summary and `hangwatch report`,
// next to the lag figures, on python3 under the preload shim.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"
#include "tools/reader/hang_rate.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

TEST(RunHangRate, RunAndReportPrintTheHangRateNextToTheLag) {
  // One busy hang of at least 600 ms between two waits; the lag record (written at exit)
  // covers the time watched.
  TempDir dir;
  const auto py = RunCommand({kCli, "run", "--threshold-ms", "200", "--report", dir / "h.jsonl",
                              "--", "/usr/bin/python3", "-c",
                              "import select, time\n"
                              "select.select([], [], [], 0.05)\n"
                              "end = time.monotonic() + 0.6\n"
                              "while time.monotonic() < end: pass\n"
                              "select.select([], [], [], 0.05)\n"},
                             {"HANGWATCH_LAG_INTERVAL_MS=0"});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(dir / "h.jsonl", &report, &error)) << error << py.err;
  ASSERT_EQ(report.hangs.size(), 1u) << py.err;
  ASSERT_EQ(report.lags.size(), 1u) << py.err;
  const tools::HangRate rate = tools::HangRateOf(report.hangs, report.lags);
  ASSERT_TRUE(rate.known());
  EXPECT_GE(rate.hang_ms, 400u);
  EXPECT_GE(rate.watched_ms, rate.hang_ms);
  const std::string described = tools::DescribeHangRate(rate);
  EXPECT_TRUE(Has(py.err, "; " + described + "\n")) << described << "\n" << py.err;
  const auto text = RunCommand({kCli, "report", dir / "h.jsonl"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Has(text.out, "; " + described + "\n")) << described << "\n" << text.out;
}

}  // namespace
}  // namespace hangwatch::testing
