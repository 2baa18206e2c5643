// HANGWATCH_THREADS under the preload shim (integrations/preload/thread_waits.h,
// thread_selection.h): an unmodified program with three poll loops (main, io-stall, io-calm) and
// two helper threads that wait in poll (helper-once, resolver: preload_threads_fixture.cc).
// `loops` reports the 300 ms pass of io-stall (busy) and of io-nested (blocked in its handler's
// own poll) as hangs of those threads, with their names as roles, and nothing of the helpers, whose
// time blocked in read() after their polls would be a 1 s "pass" if every thread were watched from
// its first wait; `main` watches the main thread alone; patterns watch only the threads whose names
// they match; a malformed value is one line and the main thread alone.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

struct Outcome {
  tools::Report report;
  std::string text;  // the report file
  int status = -1;
  std::string stdout_line;
};

// Runs the fixture under the shim with HANGWATCH_THREADS=`threads` (null: unset) until it ends.
Outcome RunFixture(const char* threads, const std::vector<std::string>& args = {}) {
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  std::vector<std::string> env = {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=150",
                                  "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                                  "HANGWATCH_LAG_INTERVAL_MS=0"};
  if (threads != nullptr) env.push_back(std::string("HANGWATCH_THREADS=") + threads);
  std::vector<std::string> argv = {PRELOAD_THREADS_FIXTURE};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv, env);
  Outcome o;
  child.ReadLine(&o.stdout_line, std::chrono::seconds(30));
  o.status = child.WaitAtMost(std::chrono::seconds(30));
  o.text = ReadFile(report_path);
  std::string error;
  tools::ParseJsonLines(o.text, &o.report, &error);
  return o;
}

std::set<std::string> LagRoles(const tools::Report& r) {
  std::set<std::string> roles;
  for (const auto& lag : r.lags) roles.insert(lag.thread_role.empty() ? "main" : lag.thread_role);
  return roles;
}

TEST(PreloadThreads, LoopsReportsTheStalledLoopThreadsAndNoHelper) {
  const Outcome o = RunFixture("loops");
  ASSERT_EQ(o.status, 0);
  EXPECT_EQ(o.stdout_line, "done");
  ASSERT_EQ(o.report.hangs.size(), 2u) << o.text;
  for (const HangRecord& h : o.report.hangs) {
    EXPECT_EQ(h.thread_name, h.thread_role);
    EXPECT_GE(h.duration_ms, 250u) << o.text;
    EXPECT_LT(h.duration_ms, 1000u) << "the helpers blocked in read() for about 1 s\n" << o.text;
  }
  const HangRecord& busy =
      o.report.hangs[0].thread_role == "io-stall" ? o.report.hangs[0] : o.report.hangs[1];
  const HangRecord& nested = &busy == &o.report.hangs[0] ? o.report.hangs[1] : o.report.hangs[0];
  EXPECT_EQ(busy.thread_role, "io-stall") << o.text;
  EXPECT_EQ(busy.hang_class, HangClass::kBusy);
  // The handler's own poll, deeper than the thread's loop wait, is part of the pass: the thread
  // learned where its loop waits.
  EXPECT_EQ(nested.thread_role, "io-nested") << o.text;
  EXPECT_EQ(nested.hang_class, HangClass::kBlocked);
  // Each loop thread's passes have lag records of their own; the helpers are not watched.
  EXPECT_EQ(LagRoles(o.report), (std::set<std::string>{"main", "io-stall", "io-nested", "io-calm"}))
      << o.text;
}

TEST(PreloadThreads, MainWatchesTheMainThreadAlone) {
  for (const char* value : {static_cast<const char*>(nullptr), "main"}) {
    const Outcome o = RunFixture(value);
    ASSERT_EQ(o.status, 0);
    EXPECT_TRUE(o.report.hangs.empty()) << o.text;
    EXPECT_EQ(LagRoles(o.report), (std::set<std::string>{"main"})) << o.text;
  }
}

TEST(PreloadThreads, PatternsWatchOnlyTheThreadsTheyName) {
  {
    const Outcome o = RunFixture("io-s*");
    ASSERT_EQ(o.report.hangs.size(), 1u) << o.text;
    EXPECT_EQ(o.report.hangs[0].thread_role, "io-stall");
    EXPECT_EQ(LagRoles(o.report), (std::set<std::string>{"main", "io-stall"})) << o.text;
  }
  {
    // io-calm is watched and never slow; io-stall and io-nested are not named; the helpers
    // never qualify.
    const Outcome o = RunFixture("io-c?lm,helper-*,resolver");
    EXPECT_TRUE(o.report.hangs.empty()) << o.text;
    EXPECT_EQ(LagRoles(o.report), (std::set<std::string>{"main", "io-calm"})) << o.text;
  }
}

TEST(PreloadThreads, MalformedValueWatchesTheMainThreadAlone) {
  // Each refusal's reason is preload_config_test's; here what the process gets.
  for (const char* value : {"io-*,", "loops,io-*"}) {
    const Outcome o = RunFixture(value);
    ASSERT_EQ(o.status, 0) << value;
    EXPECT_TRUE(o.report.hangs.empty()) << value << "\n" << o.text;
    EXPECT_EQ(LagRoles(o.report), (std::set<std::string>{"main"})) << value << "\n" << o.text;
  }
}

// More loop threads than Config::max_watched_threads (64): the first 64 to qualify are watched,
// the rest are not (and the process runs on).
TEST(PreloadThreads, LoopThreadsBeyondTheSlotsAreNotWatched) {
  const Outcome o = RunFixture("loops", {"--extra", "70"});
  ASSERT_EQ(o.status, 0);
  EXPECT_EQ(o.stdout_line, "done");
  const std::set<std::string> roles = LagRoles(o.report);
  EXPECT_EQ(roles.size(), 65u) << "main and 64 threads";
}

}  // namespace
}  // namespace hangwatch::testing
