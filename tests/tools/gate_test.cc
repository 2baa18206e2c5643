// The gate's verdict on hand-made records (tools/gate/gate_verdict.h): new / known / fixed by
// signature, allow list, hang and lag budgets, readable unique names; and its output formats
// (tools/gate/gate_output.h) on such verdicts; the gate's reader (tools/gate/gate_reader.h), which
// tallies hangs per signature and decodes only the longest of each.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "report/record_scan.h"
#include "report/report_record.h"
#include "report/stack_identity.h"
#include "tools/gate/gate_options.h"
#include "tools/gate/gate_output.h"
#include "tools/gate/gate_reader.h"
#include "tools/gate/gate_verdict.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::Has;

Frame AppFrame(const std::string& symbol, uint64_t offset, const std::string& file = "",
               int line = 0) {
  Frame f;
  f.module = "/srv/app";
  f.build_id = "ab12";
  f.offset = offset;
  f.addr = 0x550000000000 + offset;
  f.symbol = symbol;
  f.file = file;
  f.line = line;
  return f;
}

// A hang whose dominant stack is `symbols` (innermost first) in the app's module, under libc's
// clock_nanosleep and above __libc_start_main.
HangRecord Hang(const std::string& signature, std::vector<std::string> symbols,
                uint64_t duration_ms, const std::string& file = "", int line = 0) {
  HangRecord h;
  h.pid = 42;
  h.process = "/srv/app";
  h.process_name = "app";
  h.duration_ms = duration_ms;
  h.signature = signature;
  Stack s;
  s.count = 1;
  Frame libc;
  libc.module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  libc.symbol = "clock_nanosleep";
  libc.offset = 0x100;
  s.frames.push_back(libc);
  uint64_t offset = 0x1000;
  for (size_t i = 0; i < symbols.size(); ++i) {
    s.frames.push_back(AppFrame(symbols[i], offset += 0x40, i == 0 ? file : "", i == 0 ? line : 0));
  }
  Frame start = libc;
  start.symbol = "__libc_start_main";
  s.frames.push_back(start);
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.culprit = report::FindCulprit(h.stacks[0]);
  return h;
}

// A lag record of `n` passes of `ms` milliseconds each (pairs).
Lag LagOf(std::vector<std::pair<uint64_t, double>> passes) {
  Lag l;
  for (const auto& [n, ms] : passes) {
    for (uint64_t k = 0; k < n; ++k) l.passes.Add(static_cast<uint64_t>(ms * 1e6));
  }
  return l;
}

const HangGroup* Find(const std::vector<HangGroup>& groups, const std::string& signature) {
  for (const HangGroup& g : groups) {
    if (g.signature == signature) return &g;
  }
  return nullptr;
}

constexpr char kA[] = "aaaaaaaaaaaaaaaa";
constexpr char kB[] = "bbbbbbbbbbbbbbbb";
constexpr char kC[] = "cccccccccccccccc";

TEST(AllowList, EntriesNeedAReason) {
  std::vector<AllowEntry> allow;
  std::string error;
  ASSERT_TRUE(
      ParseAllowList("# comment\n\n  AAAAAAAAAAAAAAAA   # flaky sleep in CI  \n"
                     "ns::Slow*\t# known slow path, ticket 12\n"
                     "operator new(unsigned long) # allocator\n",
                     &allow, &error))
      << error;
  ASSERT_EQ(allow.size(), 3u);
  EXPECT_TRUE(allow[0].is_signature);
  EXPECT_EQ(allow[0].pattern, kA);  // lower case
  EXPECT_EQ(allow[0].reason, "flaky sleep in CI");
  EXPECT_EQ(allow[0].line, 3);
  EXPECT_FALSE(allow[1].is_signature);
  EXPECT_EQ(allow[1].pattern, "ns::Slow*");
  EXPECT_EQ(allow[2].pattern, "operator new(unsigned long)");

  for (const char* bad : {"ns::Slow*\n", "ns::Slow*   #   \n", "# ok\nfoo#bar\n", "  # \n x #"}) {
    std::vector<AllowEntry> out;
    error.clear();
    EXPECT_FALSE(ParseAllowList(bad, &out, &error)) << bad;
    EXPECT_TRUE(Has(error, "line ")) << error;
  }
  std::vector<AllowEntry> out;
  EXPECT_FALSE(ParseAllowList("a # ok\nb\n", &out, &error));
  EXPECT_TRUE(Has(error, "line 2:")) << error;
}

TEST(AllowList, MatchesSignatureOrCulpritGlob) {
  std::vector<AllowEntry> allow;
  std::string error;
  ASSERT_TRUE(ParseAllowList(std::string(kA) + " # a\nns::Slow* # b\n", &allow, &error));
  EXPECT_EQ(FindAllowEntry(allow, kA, "whatever"), &allow[0]);
  EXPECT_EQ(FindAllowEntry(allow, kB, "ns::SlowPath(int)"), &allow[1]);
  EXPECT_EQ(FindAllowEntry(allow, kB, "ns::Fast()"), nullptr);
  EXPECT_EQ(FindAllowEntry(allow, "", "other"), nullptr);
}

TEST(GateVerdict, WithoutBaselineEveryHangIsNewAndFails) {
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300), Hang(kA, {"Parse", "main"}, 500),
             Hang(kB, {"Render", "main"}, 400)};
  const GateVerdict v = ComputeVerdict(r, nullptr, {}, {});
  EXPECT_FALSE(v.passed);
  EXPECT_FALSE(v.has_baseline);
  ASSERT_EQ(v.new_hangs.size(), 2u);
  EXPECT_TRUE(v.known.empty());
  EXPECT_TRUE(v.fixed.empty());
  // Longest first.
  EXPECT_EQ(v.new_hangs[0].signature, kA);
  EXPECT_EQ(v.new_hangs[0].count, 2u);
  EXPECT_EQ(v.new_hangs[0].max_duration_ms, 500u);
  EXPECT_EQ(v.new_hangs[0].total_duration_ms, 800u);
  EXPECT_EQ(v.new_hangs[0].culprit_name, "Parse");
  EXPECT_TRUE(v.new_hangs[0].failed);
  ASSERT_EQ(v.violations.size(), 2u);
  EXPECT_EQ(v.violations[0].kind, "new_hang");
  EXPECT_TRUE(Has(v.violations[0].message, "new hang in Parse")) << v.violations[0].message;
}

// Shutdown-phase hangs (a pass the process's exit ended) are counted, not judged, unless
// --judge-shutdown; a run-phase hang of the same signature is judged apart from them.
TEST(GateVerdict, ShutdownPhaseHangsAreJudgedOnlyWhenAsked) {
  Report r;
  r.hangs = {Hang(kA, {"Drain", "main"}, 700), Hang(kA, {"Drain", "main"}, 300)};
  r.hangs[0].phase = HangPhase::kShutdown;
  GateVerdict v = ComputeVerdict(r, nullptr, {}, {});
  EXPECT_EQ(v.shutdown_hangs, 1u);
  ASSERT_EQ(v.new_hangs.size(), 1u) << "the run-phase one";
  EXPECT_EQ(v.new_hangs[0].max_duration_ms, 300u);
  EXPECT_FALSE(v.passed);

  r.hangs.pop_back();
  v = ComputeVerdict(r, nullptr, {}, {});
  EXPECT_TRUE(v.passed);
  EXPECT_TRUE(v.new_hangs.empty());
  EXPECT_TRUE(Has(FormatGateText(v, 8), "1 shutdown-phase hang (")) << FormatGateText(v, 8);

  GateBudgets judge;
  judge.judge_shutdown = true;
  v = ComputeVerdict(r, nullptr, {}, judge);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.shutdown_hangs, 0u);
  ASSERT_EQ(v.new_hangs.size(), 1u);
  EXPECT_EQ(v.new_hangs[0].max_duration_ms, 700u);
}

TEST(GateVerdict, BaselineSortsIntoNewKnownAndFixed) {
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300), Hang(kB, {"Render", "main"}, 400)};
  const std::vector<HangRecord> baseline = {Hang(kA, {"Parse", "main"}, 900),
                                            Hang(kC, {"Load", "main"}, 350)};
  GateVerdict v = ComputeVerdict(r, &baseline, {}, {});
  EXPECT_TRUE(v.has_baseline);
  ASSERT_EQ(v.new_hangs.size(), 1u);
  EXPECT_EQ(v.new_hangs[0].signature, kB);
  ASSERT_EQ(v.known.size(), 1u);
  EXPECT_EQ(v.known[0].signature, kA);
  EXPECT_EQ(v.known[0].max_duration_ms, 300u);  // this run's figures
  EXPECT_FALSE(v.known[0].failed);
  ASSERT_EQ(v.fixed.size(), 1u);
  EXPECT_EQ(v.fixed[0].signature, kC);
  EXPECT_EQ(v.fixed[0].culprit_name, "Load");
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].signature, kB);

  // Only known hangs: passed, and still listed.
  r.hangs = {Hang(kA, {"Parse", "main"}, 300)};
  v = ComputeVerdict(r, &baseline, {}, {});
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.known.size(), 1u);
  EXPECT_TRUE(v.violations.empty());
}

TEST(GateVerdict, AllowedHangsAreListedAndNeverFail) {
  std::vector<AllowEntry> allow;
  std::string error;
  ASSERT_TRUE(
      ParseAllowList("Render* # the renderer's first frame compiles shaders\n", &allow, &error));
  Report r;
  r.hangs = {Hang(kB, {"RenderFrame", "main"}, 4000)};
  GateVerdict v = ComputeVerdict(r, nullptr, allow, {});
  EXPECT_TRUE(v.passed);
  ASSERT_EQ(v.new_hangs.size(), 1u);
  EXPECT_EQ(v.new_hangs[0].allowed, &allow[0]);
  EXPECT_FALSE(v.new_hangs[0].failed);
  // Allowed hangs do not count against --max-hangs either.
  GateBudgets budgets;
  budgets.max_hangs = 0;
  r.hangs.push_back(Hang(kA, {"Parse", "main"}, 300));
  v = ComputeVerdict(r, nullptr, allow, budgets);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].kind, "hang_count");
  EXPECT_EQ(v.violations[0].value, 1);
}

TEST(GateVerdict, HangDurationBudget) {
  GateBudgets budgets;
  budgets.max_hang_ms = 500;
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 500), Hang(kB, {"Render", "main"}, 501)};
  const GateVerdict v = ComputeVerdict(r, nullptr, {}, budgets);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].kind, "hang_duration");
  EXPECT_EQ(v.violations[0].signature, kB);
  EXPECT_EQ(v.violations[0].value, 501);
  EXPECT_EQ(v.violations[0].budget, 500);
  EXPECT_FALSE(Find(v.new_hangs, kA)->failed);
  EXPECT_TRUE(Find(v.new_hangs, kB)->failed);
}

TEST(GateVerdict, HangCountBudgetCountsRecordsOfNewHangsOnly) {
  GateBudgets budgets;
  budgets.max_hangs = 3;
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300), Hang(kA, {"Parse", "main"}, 300),
             Hang(kB, {"Render", "main"}, 300), Hang(kC, {"Load", "main"}, 300)};
  const std::vector<HangRecord> baseline = {Hang(kC, {"Load", "main"}, 300)};
  GateVerdict v = ComputeVerdict(r, &baseline, {}, budgets);
  EXPECT_TRUE(v.passed);  // 3 new records: within the budget; the known one is not counted
  r.hangs.push_back(Hang(kB, {"Render", "main"}, 300));
  v = ComputeVerdict(r, &baseline, {}, budgets);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].kind, "hang_count");
  EXPECT_EQ(v.violations[0].value, 4);
  EXPECT_EQ(v.violations[0].budget, 3);
  EXPECT_TRUE(Find(v.new_hangs, kA)->failed);
  EXPECT_FALSE(Find(v.known, kC)->failed);
}

TEST(GateVerdict, LagRecordsAreAddedBeforeTheBudgetsApply) {
  // 1,900 passes of 1 ms in one record, 80 of 20 ms and 20 of 40 ms in another: together,
  // p99 is one of the 40 ms passes and exactly 100 passes are longer than 16 ms.
  Report r;
  r.lags = {LagOf({{1900, 1.0}}), LagOf({{80, 20.0}, {20, 40.0}})};
  GateBudgets budgets;
  budgets.max_p99_ms = 50;
  budgets.max_slow_passes = {{0, 100}, {2, 0}};  // >16 ms: 100, >50 ms: 0
  GateVerdict v = ComputeVerdict(r, nullptr, {}, budgets);
  ASSERT_TRUE(v.lag.has_value());
  EXPECT_EQ(v.lag->records, 2u);
  EXPECT_EQ(v.lag->figures.passes, 2000u);
  EXPECT_NEAR(v.lag->figures.p99_ms, 40.0, 0.4);
  EXPECT_NEAR(v.lag->figures.p50_ms, 1.0, 0.01);
  EXPECT_EQ(v.lag->figures.slow_passes[0], 100u);
  EXPECT_TRUE(v.passed) << FormatGateText(v, 10);

  budgets.max_p99_ms = 39;
  budgets.max_slow_passes = {{0, 99}, {1, 20}};  // >33 ms: 20 allowed
  v = ComputeVerdict(r, nullptr, {}, budgets);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.violations.size(), 2u);
  EXPECT_EQ(v.violations[0].kind, "p99");
  EXPECT_EQ(v.violations[0].budget, 39);
  EXPECT_EQ(v.violations[1].kind, "slow_passes");
  EXPECT_EQ(v.violations[1].value, 100);
  EXPECT_TRUE(Has(v.violations[1].message, "longer than 16 ms")) << v.violations[1].message;
}

TEST(GateVerdict, LagBudgetWithoutLagRecordsIsAViolation) {
  GateBudgets budgets;
  budgets.max_p99_ms = 16;
  const GateVerdict v = ComputeVerdict(Report{}, nullptr, {}, budgets);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].kind, "no_lag");
}

TEST(GateVerdict, NamesAreReadableAndUnique) {
  Report r;
  r.hangs = {Hang(kA, {"Wait", "OnClick", "main"}, 300), Hang(kB, {"Wait", "OnTimer", "main"}, 300),
             Hang(kC, {"Parse", "main"}, 300),
             // Same function names as kA, another signature (a frame the name walk skips).
             Hang("dddddddddddddddd", {"Wait", "OnClick", "main"}, 300)};
  const GateVerdict v = ComputeVerdict(r, nullptr, {}, {});
  EXPECT_EQ(Find(v.new_hangs, kC)->name, "Parse");
  EXPECT_EQ(Find(v.new_hangs, kB)->name, "Wait \xE2\x86\x90 OnTimer");
  EXPECT_EQ(Find(v.new_hangs, kA)->name, "Wait \xE2\x86\x90 OnClick \xE2\x86\x90 main");
  EXPECT_EQ(Find(v.new_hangs, "dddddddddddddddd")->name,
            "Wait \xE2\x86\x90 OnClick \xE2\x86\x90 main #2");
}

TEST(GateVerdict, HangsWithoutSignatureGetOneFromTheirStack) {
  Report r;
  r.hangs = {Hang("", {"Parse", "main"}, 300)};
  const std::vector<HangRecord> baseline = {Hang("", {"Parse", "main"}, 300)};
  const GateVerdict v = ComputeVerdict(r, &baseline, {}, {});
  ASSERT_EQ(v.known.size(), 1u);
  EXPECT_EQ(v.known[0].signature, report::Signature(r.hangs[0].stacks[0]));
  EXPECT_EQ(v.known[0].signature.size(), 16u);
}

TEST(GateOutput, JsonHasTheVerdictObject) {
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300, "/src/parse.cc", 12),
             Hang(kB, {"Render", "main"}, 400)};
  r.lags = {LagOf({{10, 2.0}})};
  const std::vector<HangRecord> baseline = {Hang(kB, {"Render", "main"}, 300),
                                            Hang(kC, {"Load", "main"}, 300)};
  const GateVerdict v = ComputeVerdict(r, &baseline, {}, {});
  const auto j = nlohmann::json::parse(FormatGateJson(v));
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["new"].size(), 1u);
  EXPECT_EQ(j["new"][0]["signature"], kA);
  EXPECT_EQ(j["new"][0]["culprit"], "Parse");
  EXPECT_EQ(j["new"][0]["culprit_file"], "/src/parse.cc");
  EXPECT_EQ(j["new"][0]["culprit_line"], 12);
  EXPECT_EQ(j["new"][0]["count"], 1);
  EXPECT_EQ(j["new"][0]["max_duration_ms"], 300);
  EXPECT_EQ(j["new"][0]["example"]["pid"], 42);
  EXPECT_EQ(j["known"][0]["signature"], kB);
  EXPECT_EQ(j["fixed"][0]["signature"], kC);
  ASSERT_EQ(j["violations"].size(), 1u);
  EXPECT_EQ(j["violations"][0]["kind"], "new_hang");
  EXPECT_EQ(j["lag"]["passes"], 10);
}

TEST(GateOutput, MarkdownGithubAndJunitNameTheCulpritAndItsLine) {
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300, "/work/repo/src/parse,v2.cc", 12)};
  r.lags = {LagOf({{99, 1.0}, {1, 30.0}})};
  GateBudgets budgets;
  budgets.max_hangs = 0;
  budgets.max_slow_passes = {{0, 0}};
  const GateVerdict v = ComputeVerdict(r, nullptr, {}, budgets);

  const std::string md = FormatGateMarkdown(v);
  EXPECT_TRUE(Has(md, "failed (2 violations)")) << md;
  EXPECT_TRUE(Has(md, "| `Parse` | `/work/repo/src/parse,v2.cc:12` | 1 | 300 ms |")) << md;
  EXPECT_TRUE(Has(md, "| passes &gt; 16 ms | 1 | \xE2\x89\xA4 0 \xE2\x9D\x8C |")) << md;

  const std::string gh = FormatGateGithub(v, "/work/repo");
  EXPECT_TRUE(Has(gh, "::error file=src/parse%2Cv2.cc,line=12,title=hangwatch%3A new hang::"))
      << gh;
  EXPECT_TRUE(Has(gh, "stalled in Parse")) << gh;
  EXPECT_TRUE(Has(gh, "::error title=hangwatch%3A slow_passes::1 passes longer than 16 ms")) << gh;

  const std::string junit = FormatGateJunit(v, "suite", 1.5);
  EXPECT_TRUE(Has(junit, "name=\"hang in Parse\"")) << junit;
  EXPECT_FALSE(Has(junit, "name=\"hang in " + std::string(kA))) << junit;
  EXPECT_TRUE(Has(junit, "name=\"at most 0 passes longer than 16 ms\"")) << junit;
  EXPECT_TRUE(Has(junit, "tests=\"3\" failures=\"3\"")) << junit;
}

TEST(GateOutput, GithubAndJunitNameTheCause) {
  Report r;
  r.hangs = {Hang(kA, {"Flush", "main"}, 900, "/work/repo/src/journal.cc", 88),
             Hang(kB, {"Parse", "main"}, 300)};
  Cause& c = r.hangs[0].cause;
  c.kind = CauseKind::kLock;
  c.summary =
      "waiting for mutex 0x55b7c0 held by thread 1636 \"db-writer\", which is in fsync(fd 3)";
  const GateVerdict v = ComputeVerdict(r, nullptr, {}, GateBudgets{});

  const std::string gh = FormatGateGithub(v, "/work/repo");
  const std::string want =
      "; cause lock: waiting for mutex 0x55b7c0 held by thread 1636 \"db-writer\", which is in "
      "fsync(fd 3)";
  EXPECT_TRUE(Has(gh, "stalled in Flush: 1 hang, longest 900 ms (signature " + std::string(kA) +
                          ")" + want + "\n"))
      << gh;
  // A hang without a cause says nothing of one.
  EXPECT_TRUE(Has(gh, "(signature " + std::string(kB) + ")\n")) << gh;

  const std::string junit = FormatGateJunit(v, "suite", 1.5);
  EXPECT_TRUE(Has(junit,
                  "; cause lock: waiting for mutex 0x55b7c0 held by thread 1636 "
                  "&quot;db-writer&quot;, which is in fsync(fd 3)\""))
      << junit;
  // No summary (an older writer): the cause is described from its fields.
  Report old = r;
  old.hangs[0].cause.summary.clear();
  old.hangs[0].cause.lock = CauseLock{"condition_variable", 0x10};
  const std::string gh_old = FormatGateGithub(ComputeVerdict(old, nullptr, {}, GateBudgets{}), "");
  EXPECT_TRUE(Has(gh_old, "; cause lock: waiting on condition variable 0x10")) << gh_old;
}

TEST(GateOutput, TextSaysPassedAndListsKnownHangs) {
  Report r;
  r.hangs = {Hang(kA, {"Parse", "main"}, 300)};
  const std::vector<HangRecord> baseline = {Hang(kA, {"Parse", "main"}, 300)};
  const GateVerdict v = ComputeVerdict(r, &baseline, {}, {});
  const std::string text = FormatGateText(v, 10);
  EXPECT_TRUE(Has(text, "hangwatch gate: PASSED\n")) << text;
  EXPECT_TRUE(Has(text, "known hangs (in the baseline): 1\n  Parse: 1 hang, longest 300 ms"))
      << text;
}

// The report scanner the gate reads through (report/record_scan.h).
std::string_view Raw(const report::ScannedLine& s, std::string_view key) {
  return s[report::KeyIndex(key)];
}

TEST(GateReader, ScanReadsTopLevelFieldsOfWellFormedObjectsOnly) {
  report::ScannedLine s;
  ASSERT_EQ(
      report::ScanLine(R"({"type":"hang","culprit":{"signature":"inner","x":[1,{"y":"}]\""}]},)"
                       R"( "duration_ms" : 412 , "signature":"abcdef0123456789","z":null})",
                       &s),
      report::LineKind::kBad);  // a culprit of the wrong shape is fine; pid is missing
  EXPECT_EQ(Raw(s, "type"), R"("hang")");
  EXPECT_EQ(Raw(s, "signature"), R"("abcdef0123456789")");
  EXPECT_EQ(Raw(s, "duration_ms"), "412");

  report::ScannedLine t;
  EXPECT_EQ(report::ScanLine(R"({"type":"x","duration_ms":1.5,"signature":"a\"b"})", &t),
            report::LineKind::kUnknownType);
  std::string text;
  EXPECT_EQ(report::StringValue(Raw(t, "signature"), &text), "a\"b");
  EXPECT_EQ(report::ScanLine("{\"type\":\"x\"}", &t), report::LineKind::kUnknownType);
  EXPECT_EQ(report::ScanLine(" \t", &t), report::LineKind::kEmpty);
  for (const char* bad :
       {R"({"type":"hang","stacks":[{"frames":[)", R"({"a":1} x)", R"({"a":[1}])", R"({"a":})",
        R"({"a" 1})", R"(["a"])", R"({"a":"open)", R"({"a":1,})", R"({"a":tru})", R"({"a":01})",
        R"({"a":"\q"})", R"({"a":"\ud800"})", R"({"a":-})"}) {
    report::ScannedLine u;
    EXPECT_EQ(report::ScanLine(bad, &u), report::LineKind::kBad) << bad;
  }
}

// The readers' one decimal parser (gate, top, the exporter, run's launch log).
TEST(GateReader, DecimalsAreDigitsWithinTheirType) {
  uint64_t u = 0;
  EXPECT_TRUE(report::ParseUint64("18446744073709551615", &u));
  EXPECT_EQ(u, UINT64_MAX);
  for (const char* bad : {"18446744073709551616", "", "-1", "+1", "1.0", "1e3", " 1", "0x10"}) {
    EXPECT_FALSE(report::ParseUint64(bad, &u)) << bad;
  }
  int64_t i = 0;
  EXPECT_TRUE(report::ParseInt64("-9223372036854775808", &i));
  EXPECT_EQ(i, INT64_MIN);
  EXPECT_TRUE(report::ParseInt64("9223372036854775807", &i));
  EXPECT_EQ(i, INT64_MAX);
  EXPECT_FALSE(report::ParseInt64("9223372036854775808", &i));
  EXPECT_FALSE(report::ParseInt64("-", &i));
}

TEST(GateReader, ScanFindsStringEndsAtEveryOffset) {
  // Strings are skipped eight bytes at a time: an escaped quote, a backslash pair or a control
  // character at any offset must be seen.
  for (size_t n = 0; n < 40; ++n) {
    for (size_t k = 0; k < n; ++k) {
      std::string text(n, 'x');
      text.replace(k, 1, "\\\"");  // \"
      report::ScannedLine s;
      const std::string line = R"({"type":"t","symbol":")" + text +
                               R"(\\","signature":"abcdef0123456789","duration_ms":7})";
      ASSERT_EQ(report::ScanLine(line, &s), report::LineKind::kUnknownType) << line;
      EXPECT_EQ(Raw(s, "signature"), R"("abcdef0123456789")") << line;
      EXPECT_EQ(Raw(s, "duration_ms"), "7");
      std::string bad = text;
      bad[k] = '\x01';
      EXPECT_EQ(report::ScanLine(R"({"symbol":")" + bad + R"("})", &s), report::LineKind::kBad)
          << k;
      std::string torn = R"({"symbol":")" + text;  // the line ends inside the string
      EXPECT_EQ(report::ScanLine(torn, &s), report::LineKind::kBad) << torn;
    }
  }
}

TEST(GateReader, ScanFindsNestedStringsAndBracketsAcrossBlocks) {
  // Nested values are read 64 bytes at a time, strings by the parity of the quotes before each
  // byte: an escaped quote, a bracket in a string, a control character or the value's end at any
  // offset of two blocks must be seen.
  for (size_t n = 0; n < 140; ++n) {
    for (size_t k = 0; k < n; k += 1 + k / 64) {
      std::string text(n, 'x');
      text.replace(k, 1, "\\\"]");  // \"] : an escaped quote, then a bracket that is text
      report::ScannedLine s;
      const std::string head = R"({"type":"t","stacks":[{"frames":[{"symbol":")" + text;
      const std::string line = head + R"(\\"}]},{"id":1}],"duration_ms":7})";
      ASSERT_EQ(report::ScanLine(line, &s), report::LineKind::kUnknownType) << line;
      EXPECT_EQ(Raw(s, "duration_ms"), "7") << line;
      const size_t stacks = line.find("[{\"frames");
      EXPECT_EQ(Raw(s, "stacks"), line.substr(stacks, line.find(",\"duration_ms") - stacks));
      std::string bad = line;
      bad[head.size() - n + k + 3] = '\t';  // a tab is white space outside strings only
      EXPECT_EQ(report::ScanLine(bad, &s), report::LineKind::kBad) << bad;
      std::string spaced = line;
      spaced.insert(head.size() + 5, "\t");  // between "]" and "}": outside the strings
      EXPECT_EQ(report::ScanLine(spaced, &s), report::LineKind::kUnknownType) << spaced;
      EXPECT_EQ(report::ScanLine(head + R"(\\"}]})", &s), report::LineKind::kBad);  // torn
      std::string unmatched = line;
      unmatched[head.size() + 3] = ')';  // "}]}" -> ")]}": the frame's object is not closed
      EXPECT_EQ(report::ScanLine(unmatched, &s), report::LineKind::kBad) << unmatched;
    }
  }
}

// The scanner against the decoder on every line of the fuzz corpus, cut at every length and with
// JSON punctuation written over each byte: a hang the decoder reads is a hang for the scanner,
// with the signature and duration the decoder read.
TEST(GateReader, ScanAgreesWithTheDecoderOnMutatedCorpusLines) {
  std::vector<std::string> lines;
  for (const char* name : {"redis_culprit.jsonl", "small_fatal.jsonl", "valid_hang.jsonl",
                           "torn_then_valid.jsonl", "unknown_and_garbage.jsonl"}) {
    const std::string text = testing::ReadFile(std::string(FUZZ_CORPUS_DIR) + "/" + name);
    ASSERT_FALSE(text.empty()) << name;
    size_t at = 0;
    while (at < text.size()) {
      const size_t nl = text.find('\n', at);
      lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
  }
  size_t checked = 0, hangs = 0;
  auto check = [&](const std::string& m) {
    report::ScannedLine s;
    const report::LineKind kind = report::ScanLine(m, &s);
    HangRecord h;
    std::string why;
    if (ParseHangLine(m, &h, &why)) {
      ++hangs;
      EXPECT_EQ(kind, report::LineKind::kHang) << m;
      std::string text;
      EXPECT_EQ(report::StringValue(Raw(s, "signature"), &text), h.signature) << m;
      uint64_t duration_ms = 0;
      EXPECT_TRUE(report::ParseUint64(Raw(s, "duration_ms"), &duration_ms)) << m;
      EXPECT_EQ(duration_ms, h.duration_ms) << m;
    }
    ++checked;
  };
  for (const std::string& line : lines) {
    check(line);
    for (size_t cut = 0; cut < line.size(); ++cut) check(line.substr(0, cut));
    for (size_t k = 0; k < line.size(); k += 7) {
      for (char c : {'"', '\\', '{', '}', ']', ',', ':', '\x01'}) {
        std::string m = line;
        m[k] = c;
        check(m);
      }
    }
  }
  EXPECT_GT(hangs, 10u);
  EXPECT_GT(checked, 5000u);
}

// A signature's shutdown-phase hangs are tallied apart from its others: the longest of each is
// decoded, so that leaving the shutdown ones unjudged leaves the others whole.
TEST(GateReader, TalliesShutdownPhaseHangsApart) {
  testing::TempDir dir;
  const std::string path = dir / "r.jsonl";
  HangRecord shutdown = Hang(kA, {"Parse", "main"}, 900);
  shutdown.phase = HangPhase::kShutdown;
  testing::WriteFile(path, report::Encode(Hang(kA, {"Parse", "main"}, 100)) + "\n" +
                               report::Encode(shutdown) + "\n" +
                               report::Encode(Hang(kA, {"Parse", "main"}, 200)) + "\n");
  Report r;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  ASSERT_TRUE(ReadReportsForGate({path}, &r, &tallies, &lag_records, &error)) << error;
  ASSERT_EQ(r.hangs.size(), 2u);
  EXPECT_EQ(r.hangs[0].phase, HangPhase::kRun);
  EXPECT_EQ(r.hangs[0].duration_ms, 200u);
  EXPECT_EQ(tallies[0].count, 2u);
  EXPECT_EQ(r.hangs[1].phase, HangPhase::kShutdown);
  EXPECT_EQ(r.hangs[1].duration_ms, 900u);
  EXPECT_EQ(tallies[1].count, 1u);
  const GateVerdict v = ComputeVerdict(r, tallies, lag_records, nullptr, {}, {}, {});
  EXPECT_EQ(v.shutdown_hangs, 1u);
  ASSERT_EQ(v.new_hangs.size(), 1u);
  EXPECT_EQ(v.new_hangs[0].count, 2u);
  EXPECT_EQ(v.new_hangs[0].max_duration_ms, 200u);
}

TEST(GateReader, TalliesHangsPerSignatureAndDecodesTheLongest) {
  testing::TempDir dir;
  const std::string path = dir / "r.jsonl";
  Lag lag = LagOf({{5, 1.0}});
  testing::WriteFile(path, report::Encode(Hang(kA, {"Parse", "main"}, 100)) + "\n" +
                               report::Encode(Hang(kA, {"Parse", "main"}, 300)) + "\n" +
                               report::Encode(Hang(kB, {"Render", "main"}, 50)) + "\n" +
                               report::Encode(Hang(kA, {"Parse", "main"}, 200)) + "\n" +
                               report::Encode(Hang("", {"Load", "main"}, 70)) + "\n" +
                               "{\"type\":\"hang\",\"stacks\":[{\"fra\n" +  // torn
                               report::Encode(lag) + "\n" + report::Encode(lag) + "\n");
  Report r;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  ASSERT_TRUE(ReadReportsForGate({path}, &r, &tallies, &lag_records, &error)) << error;
  ASSERT_EQ(r.hangs.size(), 3u);
  ASSERT_EQ(tallies.size(), 3u);
  EXPECT_EQ(r.hangs[0].signature, kA);
  EXPECT_EQ(r.hangs[0].duration_ms, 300u);
  EXPECT_EQ(tallies[0].count, 3u);
  EXPECT_EQ(tallies[0].total_duration_ms, 600u);
  EXPECT_EQ(r.hangs[1].signature, kB);
  EXPECT_EQ(tallies[1].count, 1u);
  EXPECT_EQ(r.hangs[2].culprit.symbol, "Load");  // no signature: decoded in full
  EXPECT_EQ(tallies[2].count, 1u);
  EXPECT_EQ(r.lags.size(), 1u);  // added together as they are read
  EXPECT_EQ(lag_records, 2u);
  EXPECT_EQ(r.lags[0].passes.passes(), 10u);
  EXPECT_EQ(r.skipped_lines, 1u);

  // The verdict counts every record.
  const GateVerdict v = ComputeVerdict(r, tallies, lag_records, nullptr, {}, {}, {});
  const HangGroup* a = Find(v.new_hangs, kA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->count, 3u);
  EXPECT_EQ(a->total_duration_ms, 600u);
  EXPECT_EQ(a->max_duration_ms, 300u);

  // The same verdict as from the report reader.
  Report full;
  ASSERT_TRUE(ReadReportFile(path, &full, &error)) << error;
  const GateVerdict w = ComputeVerdict(full, nullptr, {}, {});
  EXPECT_EQ(FormatGateJson(v), FormatGateJson(w));
}

TEST(GateReader, LagLinesAddUpAsTheReportReaderReadsThem) {
  testing::TempDir dir;
  const std::string path = dir / "r.jsonl";
  Lag a = LagOf({{100, 0.5}, {3, 20.0}, {1, 120.0}});
  a.labels = {{"build", "17"}};
  const Lag b = LagOf({{50, 2.0}, {2, 600.0}});
  std::string text = report::Encode(a) + "\n" + report::Encode(b) + "\n";
  // Lines the decoder refuses: no pid; a label that is not a string; a count that is not an
  // unsigned integer; a bucket that is not a pair. Each is skipped, as by the report reader.
  const std::string good = report::Encode(b);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    const size_t at = line.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return line.replace(at, from.size(), to) + "\n";
  };
  text += with("\"pid\":0,", "");
  text += with("\"labels\":{}", "\"labels\":{\"a\":1}");
  text += with("\"slow_passes\":{\"16\":2", "\"slow_passes\":{\"16\":2.5");
  text += with("\"buckets\":[[", "\"buckets\":[[1],[");
  text += "  " + with("\"busy_ms\":", "\"busy_ms\" :  ");  // white space: still read
  testing::WriteFile(path, text);

  Report fast, full;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  ASSERT_TRUE(ReadReportsForGate({path}, &fast, &tallies, &lag_records, &error)) << error;
  ASSERT_TRUE(ReadReportFile(path, &full, &error)) << error;
  EXPECT_EQ(lag_records, 3u);
  EXPECT_EQ(full.lags.size(), 3u);
  EXPECT_EQ(fast.skipped_lines, full.skipped_lines);
  EXPECT_EQ(fast.skipped_lines, 4u);
  PassHistogram merged;
  for (const Lag& l : full.lags) merged.Merge(l.passes);
  ASSERT_EQ(fast.lags.size(), 1u);
  for (int i = 0; i < pass_histogram::kBuckets; ++i) {
    ASSERT_EQ(fast.lags[0].passes.count(i), merged.count(i)) << i;
  }
  EXPECT_EQ(fast.lags[0].passes.busy_ns(), merged.busy_ns());
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    EXPECT_EQ(fast.lags[0].passes.slow_passes(t), merged.slow_passes(t)) << t;
  }
  EXPECT_EQ(merged.slow_passes(0), 3u + 1 + 2 + 2);
}

TEST(GateReader, ALongestLineThatIsNoHangRecordFallsBackToTheReportReader) {
  testing::TempDir dir;
  const std::string path = dir / "r.jsonl";
  // The longest line is a hang at its top level (what the scan checks), but one of its stacks
  // is not an object: the decoder refuses it.
  std::string longest = report::Encode(Hang(kA, {"Parse", "main"}, 999));
  longest.replace(longest.find("\"stacks\":["), 10, "\"stacks\":[7,");
  testing::WriteFile(path,
                     report::Encode(Hang(kA, {"Parse", "main"}, 100)) + "\n" + longest + "\n");
  Report r;
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::string error;
  ASSERT_TRUE(ReadReportsForGate({path}, &r, &tallies, &lag_records, &error)) << error;
  ASSERT_EQ(r.hangs.size(), 1u);
  EXPECT_EQ(r.hangs[0].duration_ms, 100u);
  // Read again by the report reader: one tally per hang, still parallel to the hangs.
  ASSERT_EQ(tallies.size(), 1u);
  EXPECT_EQ(tallies[0].count, 1u);
  EXPECT_EQ(tallies[0].total_duration_ms, 100u);
  EXPECT_EQ(r.skipped_lines, 1u);

  testing::WriteFile(path, "not json\n{\"type\":\"hang\"\n");
  EXPECT_FALSE(ReadReportsForGate({path}, &r, &tallies, &lag_records, &error));
  EXPECT_TRUE(Has(error, path + ": malformed report: no valid record (line 1:")) << error;
  EXPECT_FALSE(ReadReportsForGate({dir / "missing"}, &r, &tallies, &lag_records, &error));
  EXPECT_TRUE(Has(error, "No such file")) << error;
}

}  // namespace
}  // namespace hangwatch::tools
