// Hang rate (tools/reader/hang_rate.h): seconds of hang per hour of watched time, over the
// hangs of the processes whose lag records give the watched time.
#include "tools/reader/hang_rate.h"

#include <gtest/gtest.h>

#include <string>

#include "tools/run/launch_log_reader.h"
#include "tools/run/run_summary.h"

namespace hangwatch::tools {
namespace {

HangRecord Hang(const std::string& host, int64_t pid, uint64_t ms) {
  HangRecord h;
  h.host = host;
  h.pid = pid;
  h.duration_ms = ms;
  return h;
}

report::Lag Lag(const std::string& host, int64_t pid, int64_t start_ms, int64_t end_ms) {
  report::Lag l;
  l.host = host;
  l.pid = pid;
  l.start_unix_ms = start_ms;
  l.end_unix_ms = end_ms;
  return l;
}

TEST(HangRateTest, HangSecondsPerWatchedHourOfTheWatchedProcesses) {
  // Two processes watched 30 minutes each (one hour), 9 s of hang between them; a third
  // process has no lag record: its hang counts on neither side.
  const std::vector<HangRecord> hangs = {Hang("a", 1, 4000), Hang("a", 1, 2000), Hang("b", 1, 3000),
                                         Hang("c", 9, 60000)};
  const std::vector<report::Lag> lags = {Lag("a", 1, 0, 900'000), Lag("a", 1, 900'000, 1'800'000),
                                         Lag("b", 1, 0, 1'800'000)};
  const HangRate rate = HangRateOf(hangs, lags);
  EXPECT_TRUE(rate.known());
  EXPECT_EQ(rate.hangs, 3u);
  EXPECT_EQ(rate.hang_ms, 9000u);
  EXPECT_EQ(rate.watched_ms, 3'600'000u);
  EXPECT_DOUBLE_EQ(rate.seconds_per_hour(), 9.0);
  EXPECT_EQ(DescribeHangRate(rate), "hang rate 9.0 s/h (9.0 s of hang in 60.0 min watched)");
}

TEST(HangRateTest, UnknownWithoutLagRecords) {
  const HangRate rate = HangRateOf({Hang("a", 1, 4000)}, {});
  EXPECT_FALSE(rate.known());
  EXPECT_EQ(rate.seconds_per_hour(), 0);
  EXPECT_EQ(DescribeHangRate(rate), "");
  // A record with an empty or backwards interval watches nothing.
  EXPECT_FALSE(HangRateOf({}, {Lag("a", 1, 5, 5), Lag("a", 1, 9, 2)}).known());
}

TEST(HangRateTest, WatchedTimeIsWrittenInUnitsPeopleRead) {
  HangRate r;
  r.hang_ms = 1500;
  r.watched_ms = 90'000;
  EXPECT_EQ(DescribeHangRate(r), "hang rate 60.0 s/h (1.5 s of hang in 90.0 s watched)");
  r.watched_ms = 600'000;
  EXPECT_EQ(DescribeHangRate(r), "hang rate 9.0 s/h (1.5 s of hang in 10.0 min watched)");
}

// Per thread role (issue 39): a render thread's hangs and watched time are its own; the main
// thread's rate is what it was without them. And `run`'s summary says each role's lag apart.
TEST(HangRateTest, EachThreadRoleHasItsOwnRateAndLag) {
  HangRecord render = Hang("a", 1, 600);
  render.thread_role = "render";
  report::Lag render_lag = Lag("a", 1, 0, 3'600'000);
  render_lag.thread_role = "render";
  render_lag.passes.Add(30'000'000);
  report::Lag main_lag = Lag("a", 1, 0, 3'600'000);
  main_lag.passes.Add(1'000'000);
  main_lag.passes.Add(1'000'000);
  const std::vector<HangRecord> hangs = {Hang("a", 1, 3000), render};
  const std::vector<report::Lag> lags = {main_lag, render_lag};
  const HangRate main = HangRateOf(hangs, lags);
  EXPECT_EQ(main.hangs, 1u);
  EXPECT_EQ(main.watched_ms, 3'600'000u);
  EXPECT_DOUBLE_EQ(main.seconds_per_hour(), 3.0);
  const HangRate r = HangRateOf(hangs, lags, "render");
  EXPECT_EQ(r.hangs, 1u);
  EXPECT_DOUBLE_EQ(r.seconds_per_hour(), 0.6);

  Report report;
  report.hangs = hangs;
  report.lags = lags;
  const std::string text = FormatWatched(WatchedProcesses(LaunchLog{}, report));
  EXPECT_NE(text.find("2 hangs"), std::string::npos) << text;
  EXPECT_NE(text.find("lag: 2 passes"), std::string::npos) << text;
  EXPECT_NE(text.find("hang rate 3.0 s/h"), std::string::npos) << text;
  EXPECT_NE(text.find("lag of thread render: 1 pass"), std::string::npos) << text;
  EXPECT_NE(text.find("hang rate 0.6 s/h"), std::string::npos) << text;
}

// The summary of `hangwatch run` says the main thread's queued + running figures under its lag
// line when a pass had a known wait (a late timer), and nothing more when none had.
TEST(HangRateTest, TheSummarySaysQueuedPlusRunningWhenAPassHadWaited) {
  Report report;
  report::Lag plain = Lag("a", 1, 0, 60'000);
  plain.passes.Add(1'000'000);
  report.lags.push_back(plain);
  EXPECT_EQ(FormatWatched(WatchedProcesses(LaunchLog{}, report)).find("queued + running"),
            std::string::npos);
  report::Lag queued = Lag("a", 1, 60'000, 120'000);
  queued.passes.Add(2'000'000);
  queued.delay.Add(550'000'000);  // a timer run 548 ms late
  queued.queued_passes = 1;
  report.lags.push_back(queued);
  const std::string text = FormatWatched(WatchedProcesses(LaunchLog{}, report));
  EXPECT_NE(text.find("lag: 2 passes"), std::string::npos) << text;
  EXPECT_NE(text.find("queued + running (1 pass had waited)"), std::string::npos) << text;
  EXPECT_NE(text.find("max 549."), std::string::npos) << text;  // its bucket's midpoint
}

// Dozens of watched thread roles in one process (`run --threads loops`): the summary shows the
// roles that hung first, eight lines at most, and counts the rest.
TEST(HangRateTest, TheSummaryShowsEightThreadRolesAtMostThoseThatHungFirst) {
  Report report;
  for (int i = 0; i < 20; ++i) {
    report::Lag l = Lag("a", 1, 0, 60'000);
    l.thread_role = "worker-" + std::to_string(i);
    l.passes.Add(1'000'000);
    report.lags.push_back(l);
  }
  HangRecord h = Hang("a", 1, 300);
  h.thread_role = "worker-19";
  report.hangs.push_back(h);
  const std::string text = FormatWatched(WatchedProcesses(LaunchLog{}, report));
  size_t lines = 0;
  for (size_t at = text.find("lag of thread "); at != std::string::npos;
       at = text.find("lag of thread ", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 8u) << text;
  EXPECT_NE(text.find("lag of thread worker-19:"), std::string::npos) << "the one that hung";
  EXPECT_NE(text.find("and the lag of 12 more thread roles"), std::string::npos) << text;
}

}  // namespace
}  // namespace hangwatch::tools
