// `hangwatch report` and `hangwatch top` over the records of several watched threads (issue 39):
// the thread of a hang that is not main's is shown, lag figures and hang rates are per thread
// role and never summed across roles, version-2 records are read; `top` has a THREAD column and
// --by thread, and never groups two roles' hangs together. Main-thread-only reports print as
// before (no THREAD column, one "Lag:" line).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "thread_lines.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

constexpr char kMainSig[] = "1111111111111111";
constexpr char kRenderSig[] = "2222222222222222";

CommandResult Hangwatch(std::vector<std::string> args) {
  args.insert(args.begin(), kCli);
  return RunCommand(args);
}

// A 200 ms main hang and a 60 ms render hang, each thread's lag: main 1000 passes of 1 ms,
// render 100 passes of 30 ms, one minute each.
struct Fixture {
  TempDir dir;
  std::string report = dir / "threads.jsonl";
  std::string main_only = dir / "main.jsonl";
  Fixture() {
    WriteFile(report, ThreadHangLine("main", kMainSig, "Parse", 200) +
                          ThreadHangLine("render", kRenderSig, "DrawFrame", 60) +
                          ThreadLagLine("main", 1000, 1.0) + ThreadLagLine("render", 100, 30.0));
    WriteFile(main_only,
              ThreadHangLine("main", kMainSig, "Parse", 200) + ThreadLagLine("main", 1000, 1.0));
  }
};

TEST(ThreadReaders, ReportShowsTheThreadAndLagPerRole) {
  Fixture f;
  const auto r = Hangwatch({"report", f.report, "--no-symbolize"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "2 hangs")) << r.out;
  EXPECT_TRUE(Has(r.out, "Thread:           7 (main thread)")) << r.out;
  EXPECT_TRUE(Has(r.out, "Thread:           render (tid 8, name RenderThread)")) << r.out;
  // Lag per role, never added up: main's 1000 passes, the render thread's 100, each with the
  // hang rate of its own hangs (200 ms and 60 ms in one minute: 12.0 and 3.6 s/h).
  EXPECT_TRUE(Has(r.out, "Lag: 1000 passes")) << r.out;
  EXPECT_TRUE(Has(r.out, "Lag of thread render: 100 passes")) << r.out;
  EXPECT_FALSE(Has(r.out, "1100 passes")) << r.out;
  EXPECT_TRUE(Has(r.out, "hang rate 12.0 s/h")) << r.out;
  EXPECT_TRUE(Has(r.out, "hang rate 3.6 s/h")) << r.out;
  // Version-2 records are read, not skipped as another format_version.
  EXPECT_FALSE(Has(r.out, "format_version")) << r.out;
  // The main thread's report is what it was: one lag line, the main thread's header.
  const auto m = Hangwatch({"report", f.main_only, "--no-symbolize"});
  EXPECT_FALSE(Has(m.out, "Lag of thread")) << m.out;
  EXPECT_TRUE(Has(m.out, "Lag: 1000 passes")) << m.out;
  EXPECT_TRUE(Has(m.out, "hang rate 12.0 s/h")) << m.out;
}

TEST(ThreadReaders, ReportJsonAndTraceKeepTheThread) {
  Fixture f;
  const auto r = Hangwatch({"report", f.report, "--no-symbolize", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, R"("format_version":2,"pid":7,"tid":8,"thread":{"tid":8,)"
                         R"("name":"RenderThread","role":"render"})"))
      << r.out;
  EXPECT_TRUE(Has(r.out, R"("format_version":1,"pid":7,"tid":7,"thread":{"tid":7,)")) << r.out;
  const auto t = Hangwatch({"report", f.report, "--no-symbolize", "--format", "trace"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(Has(t.out, "render thread (RenderThread)")) << t.out;
  EXPECT_TRUE(Has(t.out, "main thread")) << t.out;
}

TEST(ThreadReaders, TopGroupsRolesApartAndByThread) {
  Fixture f;
  // The same signature on both threads: two groups, one per role.
  const std::string same = f.dir / "same.jsonl";
  WriteFile(same, ThreadHangLine("main", kMainSig, "Parse", 200) +
                      ThreadHangLine("render", kMainSig, "Parse", 60) +
                      ThreadHangLine("render", kMainSig, "Parse", 80) +
                      ThreadLagLine("main", 1000, 1.0) + ThreadLagLine("render", 100, 30.0));
  auto r = Hangwatch({"top", same, "--no-symbolize", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r.out;
  EXPECT_EQ(j[0]["role"], "render");
  EXPECT_EQ(j[0]["count"], 2);
  EXPECT_EQ(j[0]["key"], kMainSig);
  EXPECT_EQ(j[1].value("role", "main"), "main");
  EXPECT_EQ(j[1]["count"], 1);
  // Hang rates per role: 140 ms of render hangs in the render thread's minute (8.4 s/h), 200 ms
  // of main's in main's (12.0 s/h).
  EXPECT_NEAR(j[0]["hang_seconds_per_hour"].get<double>(), 8.4, 0.01);
  EXPECT_NEAR(j[1]["hang_seconds_per_hour"].get<double>(), 12.0, 0.01);
  // Text: a THREAD column.
  r = Hangwatch({"top", same, "--no-symbolize"});
  EXPECT_TRUE(Has(r.out, "PROCESS          THREAD     signature")) << r.out;
  EXPECT_TRUE(Has(r.out, "app              render     " + std::string(kMainSig))) << r.out;
  // --by thread: one group per role.
  r = Hangwatch({"top", f.report, "--no-symbolize", "--by", "thread", "--format", "json"});
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r.out;
  std::vector<std::string> keys = {j[0]["key"], j[1]["key"]};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"main", "render"}));
  for (const auto& g : j) EXPECT_EQ(g["by"], "thread");
  // A main-thread-only report has no THREAD column.
  r = Hangwatch({"top", f.main_only, "--no-symbolize"});
  EXPECT_FALSE(Has(r.out, "THREAD")) << r.out;
  EXPECT_FALSE(Has(r.out, "\"role\"")) << r.out;
}

}  // namespace
}  // namespace hangwatch::testing
