// `hangwatch gate` over the records of several watched threads (issue 39): hangs grouped by
// thread role and signature, budgets per role (--max-hang-ms render=50,main=250; a plain value
// judges the main thread only), lag judged per role and never summed across roles, version-2
// records (a role other than main) read, bad role values refused with one line and exit 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "thread_lines.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

std::string HangLine(const std::string& role, const std::string& signature,
                     const std::string& symbol, uint64_t duration_ms) {
  return ThreadHangLine(role, signature, symbol, duration_ms);
}
std::string LagLine(const std::string& role, uint64_t n, double ms) {
  return ThreadLagLine(role, n, ms);
}

constexpr char kMainSig[] = "1111111111111111";
constexpr char kRenderSig[] = "2222222222222222";

// A 200 ms main-thread hang, a 60 ms render-thread hang; lag: main 1000 passes of 1 ms, render
// 100 passes of 30 ms.
struct Fixture {
  TempDir dir;
  std::string report = dir / "threads.jsonl";
  Fixture() {
    WriteFile(report, HangLine("main", kMainSig, "Parse", 200) +
                          HangLine("render", kRenderSig, "DrawFrame", 60) +
                          LagLine("main", 1000, 1.0) + LagLine("render", 100, 30.0));
  }
};

CommandResult Gate(std::vector<std::string> args) {
  args.insert(args.begin(), {kCli, "gate"});
  args.push_back("--no-symbolize");
  return RunCommand(args);
}

std::vector<std::string> ViolationRoles(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& v : j["violations"])
    out.push_back(v.value("role", "main") + ":" + v["kind"].get<std::string>());
  return out;
}

TEST(GateRoles, HangBudgetsArePerRole) {
  Fixture f;
  // render=50 fails the 60 ms render hang, main=250 passes the 200 ms main hang.
  auto r = Gate({f.report, "--max-hang-ms", "render=50,main=250", "--format", "json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(ViolationRoles(j), (std::vector<std::string>{"render:hang_duration"}));
  ASSERT_EQ(j["new"].size(), 2u);
  for (const auto& g : j["new"]) {
    EXPECT_EQ(g["failed"], g.value("role", "main") == "render") << g.dump();
  }
  EXPECT_EQ(j["budgets"]["max_hang_ms"], 250);
  EXPECT_EQ(j["budgets"]["roles"]["render"]["max_hang_ms"], 50);
  // A plain number is the main thread's: it does not judge the render hang.
  r = Gate({f.report, "--max-hang-ms", "100", "--format", "json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(ViolationRoles(j), (std::vector<std::string>{"main:hang_duration"}));
  EXPECT_EQ(j["violations"][0]["signature"], kMainSig);
  r = Gate({f.report, "--max-hang-ms", "250"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Text names the thread of a group that is not main's, and of its violation.
  r = Gate({f.report, "--max-hang-ms", "render=50"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(Has(r.out, "new hang longer than 50 ms (thread render) in DrawFrame")) << r.out;
  EXPECT_TRUE(Has(r.out, ", app, thread render, signature 2222222222222222")) << r.out;
  // --max-hangs per role too: one render hang allowed, none of main.
  r = Gate({f.report, "--max-hangs", "render=1,main=0", "--format", "json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(ViolationRoles(nlohmann::json::parse(r.out)),
            (std::vector<std::string>{"main:hang_count"}));
}

TEST(GateRoles, ASignatureOnTwoThreadsIsTwoGroups) {
  TempDir dir;
  const std::string report = dir / "same.jsonl";
  WriteFile(report, HangLine("main", kMainSig, "Parse", 200) +
                        HangLine("render", kMainSig, "Parse", 60) +
                        HangLine("render", kMainSig, "Parse", 70));
  const auto r = Gate({report, "--format", "json"});
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["new"].size(), 2u) << r.out;
  EXPECT_EQ(j["new"][0].value("role", "main"), "main");
  EXPECT_EQ(j["new"][0]["count"], 1);
  EXPECT_EQ(j["new"][1]["role"], "render");
  EXPECT_EQ(j["new"][1]["count"], 2);
  EXPECT_EQ(j["new"][1]["max_duration_ms"], 70);
  // A baseline knows a hang of its own role only.
  const std::string base = dir / "base.jsonl";
  WriteFile(base, HangLine("render", kMainSig, "Parse", 65));
  const auto k = nlohmann::json::parse(Gate({report, "--baseline", base, "--format", "json"}).out);
  ASSERT_EQ(k["known"].size(), 1u);
  EXPECT_EQ(k["known"][0]["role"], "render");
  ASSERT_EQ(k["new"].size(), 1u);
  EXPECT_EQ(k["new"][0].value("role", "main"), "main");
}

TEST(GateRoles, LagIsJudgedPerRoleAndNeverSummed) {
  Fixture f;
  // Main's p99 is 1 ms: a plain 16 ms budget passes, though the render thread's passes are 30 ms.
  auto r = Gate({f.report, "--max-hang-ms", "1000", "--max-p99-ms", "16", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["lag"]["passes"], 1000);  // main's alone
  EXPECT_EQ(j["lag"]["records"], 1);
  EXPECT_LT(j["lag"]["p99_ms"].get<double>(), 2.0);
  EXPECT_EQ(j["lag_by_role"]["render"]["passes"], 100);
  EXPECT_GT(j["lag_by_role"]["render"]["p99_ms"].get<double>(), 29.0);
  r = Gate({f.report, "--max-hang-ms", "1000", "--max-p99-ms", "render=16", "--max-slow-passes",
            "render=16:0", "--format", "json"});
  EXPECT_EQ(r.exit_code, 3);
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(ViolationRoles(j), (std::vector<std::string>{"render:p99", "render:slow_passes"}));
  // The text: main's lag line as before roles, the render thread's apart.
  r = Gate({f.report, "--max-hang-ms", "1000", "--max-p99-ms", "render=40"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "lag: 1000 passes in 1 record: p50 ")) << r.out;
  EXPECT_TRUE(Has(r.out, "lag of thread render: 100 passes in 1 record: p50 ")) << r.out;
  EXPECT_TRUE(Has(r.out, "(budget 40 ms)")) << r.out;
  // Version-2 records are read, not skipped as another format_version.
  EXPECT_FALSE(Has(r.err, "format_version")) << r.err;
  // A role's lag budget without lag records of that role is refused.
  r = Gate({f.report, "--max-p99-ms", "io=16"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "--max-p99-ms io=... needs lag records of thread role io")) << r.err;
}

TEST(GateRoles, BadRoleValuesAreOneLineAndExitTwo) {
  Fixture f;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--max-hang-ms", "render="},
                                               {"--max-hang-ms", "=50"},
                                               {"--max-hang-ms", "render=abc"},
                                               {"--max-hang-ms", "render=50,"},
                                               {"--max-hangs", "render=-1"},
                                               {"--max-p99-ms", "render=fast"},
                                               {"--max-slow-passes", "render=20:1"},
                                               {"--max-slow-passes", "render=16:1,render=16:2"}}) {
    std::vector<std::string> a = {f.report};
    a.insert(a.end(), args.begin(), args.end());
    const auto r = Gate(a);
    EXPECT_EQ(r.exit_code, 2) << args[1] << "\n" << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(Has(r.err, "hangwatch gate: " + args[0])) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const auto r = Gate({f.report, "--max-hang-ms", "render=abc"});
  EXPECT_TRUE(Has(r.err, "--max-hang-ms wants a number of milliseconds (1 or more) or ROLE=N"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "not 'render=abc'")) << r.err;
}

TEST(GateRoles, JunitMarkdownAndAnnotationsNameTheThread) {
  Fixture f;
  const std::string junit = f.dir / "j.xml", markdown = f.dir / "m.md";
  const auto r = Gate({f.report, "--max-hang-ms", "render=50,main=250", "--max-p99-ms", "render=16",
                       "--junit", junit, "--markdown", markdown, "--github"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::string xml = ReadFile(junit), md = ReadFile(markdown);
  EXPECT_TRUE(Has(xml, "hang in DrawFrame (thread render)")) << xml;
  EXPECT_TRUE(Has(xml, "p99 pass duration (thread render) at most 16 ms")) << xml;
  EXPECT_TRUE(Has(xml, "thread render of app stalled")) << xml;
  EXPECT_TRUE(Has(md, "`DrawFrame` (thread render)")) << md;
  EXPECT_TRUE(Has(md, "Thread `render`: 100 run-loop passes")) << md;
  EXPECT_TRUE(Has(r.out, "thread render of app stalled in DrawFrame")) << r.out;
  ExpectValidJunit(junit);
}

}  // namespace
}  // namespace hangwatch::testing
