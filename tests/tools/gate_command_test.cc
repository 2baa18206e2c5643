// `hangwatch gate` as a command: exit 0 / 3 / 2, bad input refused with one line, the JSON
// verdict, JUnit (validated against junit.xsd), Markdown and GitHub annotations; and the
// signature's promise: two builds of one program, with other code layouts and build-ids, give
// the same signatures for the same stall, so the newer build's hang is known, not new.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/report_record.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

// A hang of "app" whose dominant stack is `symbols` (innermost first) above main.
HangRecord Hang(const std::string& signature, const std::vector<std::string>& symbols,
                uint64_t duration_ms) {
  HangRecord h;
  h.pid = 7;
  h.process = "/srv/app";
  h.process_name = "app";
  h.duration_ms = duration_ms;
  h.signature = signature;
  h.fingerprint = "0123456789abcdef";
  Stack s;
  s.count = 3;
  uint64_t offset = 0x1000;
  for (const std::string& name : symbols) {
    Frame f;
    f.module = "/srv/app";
    f.offset = offset += 0x80;
    f.addr = 0x560000000000 + f.offset;
    f.symbol = name;
    s.frames.push_back(f);
  }
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.culprit.symbol = symbols[0];
  h.culprit.module = "/srv/app";
  h.culprit.offset = s.frames[0].offset;
  h.culprit.file = "/src/app/" + symbols[0] + ".cc";
  h.culprit.line = 40;
  h.culprit.frame = 0;
  return h;
}

// A lag record: `n` passes of `ms` each.
std::string LagLine(uint64_t n, double ms) {
  report::Lag l;
  l.pid = 7;
  l.process_name = "app";
  for (uint64_t k = 0; k < n; ++k) l.passes.Add(static_cast<uint64_t>(ms * 1e6));
  return report::Encode(l) + "\n";
}

constexpr char kParse[] = "1111111111111111";
constexpr char kRender[] = "2222222222222222";
constexpr char kLoad[] = "3333333333333333";

// new.jsonl: Parse (known) and Render (new), 990 passes of 1 ms and 10 of 30 ms;
// old.jsonl: Parse and Load (fixed).
struct Fixture {
  TempDir dir;
  std::string now = dir / "new.jsonl", old = dir / "old.jsonl";
  Fixture() {
    WriteFile(now, report::Encode(Hang(kParse, {"Parse", "main"}, 300)) + "\n" +
                       report::Encode(Hang(kRender, {"Render", "Frame", "main"}, 700)) + "\n" +
                       report::Encode(Hang(kRender, {"Render", "Frame", "main"}, 500)) + "\n" +
                       LagLine(990, 1.0) + LagLine(10, 30.0));
    WriteFile(old, report::Encode(Hang(kParse, {"Parse", "main"}, 350)) + "\n" +
                       report::Encode(Hang(kLoad, {"Load", "main"}, 900)) + "\n");
  }
};

CommandResult Gate(std::vector<std::string> args) {
  args.insert(args.begin(), {kCli, "gate"});
  args.push_back("--no-symbolize");
  return RunCommand(args);
}

TEST(GateCommand, SortsNewKnownFixedAndFailsOnTheNewHang) {
  Fixture f;
  const auto r = Gate({f.now, "--baseline", f.old, "--format", "json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["new"].size(), 1u);
  EXPECT_EQ(j["new"][0]["signature"], kRender);
  EXPECT_EQ(j["new"][0]["culprit"], "Render");
  EXPECT_EQ(j["new"][0]["culprit_file"], "/src/app/Render.cc");
  EXPECT_EQ(j["new"][0]["count"], 2);
  EXPECT_EQ(j["new"][0]["max_duration_ms"], 700);
  ASSERT_EQ(j["known"].size(), 1u);
  EXPECT_EQ(j["known"][0]["signature"], kParse);
  ASSERT_EQ(j["fixed"].size(), 1u);
  EXPECT_EQ(j["fixed"][0]["signature"], kLoad);
  ASSERT_EQ(j["violations"].size(), 1u);
  EXPECT_EQ(j["violations"][0]["kind"], "new_hang");
  EXPECT_EQ(j["lag"]["passes"], 1000);
  EXPECT_EQ(j["lag"]["records"], 2);

  const auto text = Gate({f.now, "--baseline", f.old});
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_TRUE(Has(text.out, "hangwatch gate: FAILED (1 violation)")) << text.out;
  EXPECT_TRUE(Has(text.out, "new hang in Render (/src/app/Render.cc:40)")) << text.out;
  EXPECT_TRUE(Has(text.out, "known hangs (in the baseline): 1\n  Parse")) << text.out;
  EXPECT_TRUE(Has(text.out, "fixed (in the baseline, not seen): 1\n  Load")) << text.out;
}

TEST(GateCommand, BudgetsAndAllowListDecideThePass) {
  Fixture f;
  // Within the budgets: two new hang records, the longest 700 ms; 10 passes over 16 ms.
  auto r = Gate({f.now, "--baseline", f.old, "--max-hangs", "2", "--max-hang-ms", "700",
                 "--max-p99-ms", "40", "--max-slow-passes", "16:10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "hangwatch gate: PASSED")) << r.out;
  // Each over by one.
  r = Gate({f.now, "--baseline", f.old, "--max-hangs", "1", "--max-hang-ms", "699",
            "--max-slow-passes=16:9", "--max-p99-ms=20", "--format=json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> kinds;
  for (const auto& v : j["violations"]) kinds.push_back(v["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"hang_duration", "hang_count", "p99", "slow_passes"}));

  // An allow list by culprit pattern: the new hang is listed, not failing.
  const std::string allow = f.dir / "allow.txt";
  WriteFile(allow,
            "# hangs we accept\nRend*   # first frame compiles shaders (issue tracker 88)\n");
  r = Gate({f.now, "--baseline", f.old, "--allow", allow, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto k = nlohmann::json::parse(r.out);
  ASSERT_EQ(k["new"].size(), 1u);
  EXPECT_EQ(k["new"][0]["allowed"]["reason"], "first frame compiles shaders (issue tracker 88)");
  // By signature.
  WriteFile(allow, std::string(kRender) + " # known since 1.2\n");
  EXPECT_EQ(Gate({f.now, "--baseline", f.old, "--allow", allow}).exit_code, 0);
}

// --max-input-delay-ms budgets the longest queued + running time of a pass: a record whose
// passes had waited (a late timer) counts them at their wait plus their time; a record without
// such passes at their own time, also when it is read together with one that has them.
TEST(GateCommand, InputDelayBudgetJudgesQueuedPlusRunning) {
  TempDir dir;
  const std::string report = dir / "lag.jsonl";
  report::Lag queued;
  queued.pid = 7;
  for (int k = 0; k < 50; ++k) queued.passes.Add(2'000'000);
  queued.delay = queued.passes;  // 48 without a wait, 2 that waited 120 ms
  queued.delay = PassHistogram();
  for (int k = 0; k < 48; ++k) queued.delay.Add(2'000'000);
  queued.delay.Add(122'000'000);
  queued.delay.Add(122'000'000);
  queued.queued_passes = 2;
  queued.queued_passes_lost = 3;
  WriteFile(report, LagLine(900, 1.0) + report::Encode(queued) + "\n" + LagLine(50, 30.0));
  // The running time alone is within 100 ms; with its wait one pass took 122 ms.
  auto r = Gate({report, "--max-p99-ms", "100", "--max-input-delay-ms", "100", "--format=json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << r.out;
  EXPECT_EQ(j["violations"][0]["kind"], "input_delay");
  EXPECT_NEAR(j["violations"][0]["value"].get<double>(), 122, 1.5);
  EXPECT_TRUE(Has(j["violations"][0]["message"].get<std::string>(), "2 of 1000 passes"))
      << j["violations"][0]["message"];
  EXPECT_EQ(Gate({report, "--max-input-delay-ms", "125"}).exit_code, 0);
  // Without any record of waits, the budget is the longest pass (30 ms here).
  const std::string plain = dir / "plain.jsonl";
  WriteFile(plain, LagLine(900, 1.0) + LagLine(50, 30.0));
  EXPECT_EQ(Gate({plain, "--max-input-delay-ms", "29"}).exit_code, 3);
  EXPECT_EQ(Gate({plain, "--max-input-delay-ms", "31"}).exit_code, 0);
  // The report command shows the queued + running figures under the lag line.
  const CommandResult text = RunCommand({kCli, "report", report});
  EXPECT_TRUE(Has(text.out, "queued + running (2 passes had waited)")) << text.out;
  // Passes the agent could not read in time are said, not dropped in silence.
  EXPECT_TRUE(Has(text.out, "3 more that had waited were counted at their own time")) << text.out;
  EXPECT_FALSE(Has(RunCommand({kCli, "report", plain}).out, "queued + running"));
  // A bad value is one line and exit 2.
  r = Gate({report, "--max-input-delay-ms", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "--max-input-delay-ms wants milliseconds")) << r.err;
}

// Input that waited on the display during a hang is an input delay too (a toolkit reads input
// before it waits again, so the lag records cannot count it): --max-input-delay-ms judges every
// hang's input.oldest_ms, also a hang the gate keeps only counted (not the longest of its
// signature).
TEST(GateCommand, InputDelayBudgetJudgesInputThatWaitedDuringAHang) {
  TempDir dir;
  const std::string report = dir / "hangs.jsonl";
  HangRecord felt = Hang(kParse, {"Parse", "main"}, 1500);
  felt.input.known = felt.input.pending = felt.input.oldest_known = true;
  felt.input.events = 6;
  felt.input.kinds = {"key"};
  felt.input.oldest_ms = 1400;
  const HangRecord longer = Hang(kParse, {"Parse", "main"}, 2500);  // no input waited
  WriteFile(report,
            report::Encode(felt) + "\n" + report::Encode(longer) + "\n" + LagLine(100, 1.0));
  auto r = Gate({report, "--max-hangs", "5", "--max-input-delay-ms", "1000", "--format=json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << r.out;
  EXPECT_EQ(j["violations"][0]["kind"], "input_delay");
  EXPECT_EQ(j["violations"][0]["value"], 1400);
  EXPECT_EQ(Gate({report, "--max-hangs", "5", "--max-input-delay-ms", "1500"}).exit_code, 0);
  // A budget of another role is not judged against main's hangs.
  EXPECT_EQ(Gate({report, "--max-hangs", "5", "--max-input-delay-ms", "render=100"}).exit_code,
            2)  // no lag records of role render
      << "a budget needs the role's lag records";
}

TEST(GateCommand, BadInputIsOneLineAndExitTwo) {
  Fixture f;
  const std::string empty = f.dir / "empty.jsonl", allow = f.dir / "allow.txt",
                    no_lag = f.dir / "nolag.jsonl";
  WriteFile(empty, "");
  WriteFile(allow, "Render*\n");
  WriteFile(no_lag, report::Encode(Hang(kParse, {"Parse", "main"}, 300)) + "\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no report file given"},
      {{f.now, "--frobnicate"}, "unknown option '--frobnicate'"},
      {{f.dir / "missing.jsonl"}, f.dir / "missing.jsonl: No such file or directory"},
      {{f.now, "--baseline", empty}, "baseline " + empty + " is empty"},
      {{f.now, "--baseline", f.dir / "gone.jsonl"}, "baseline " + f.dir / "gone.jsonl"},
      {{f.now, "--allow", allow},
       "malformed allow file " + allow + ": line 1: 'Render*' has no reason"},
      {{no_lag, "--max-p99-ms", "16"},
       "--max-p99-ms needs lag records, and " + no_lag + " has none"},
      {{no_lag, "--max-slow-passes", "50:3"}, "--max-slow-passes needs lag records"},
      {{f.now, "--max-slow-passes", "20:3"},
       "--max-slow-passes wants MS:N with MS one of 16, 33, 50"},
      {{f.now, "--max-slow-passes", "16"}, "--max-slow-passes wants MS:N"},
      {{f.now, "--max-hangs", "-1"}, "--max-hangs wants a number"},
      {{f.now, "--max-hang-ms", "0"}, "--max-hang-ms wants a number"},
      {{f.now, "--max-p99-ms", "fast"}, "--max-p99-ms wants milliseconds"},
      {{f.now, "--format", "xml"}, "unknown format 'xml'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = Gate(args);
    EXPECT_EQ(r.exit_code, 2) << message << "\n" << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_TRUE(Has(r.err, "hangwatch gate: " + message)) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // A baseline without hangs, but with records, is a clean baseline.
  const std::string clean = f.dir / "clean.jsonl";
  WriteFile(clean, LagLine(10, 1.0));
  EXPECT_EQ(Gate({f.now, "--baseline", clean}).exit_code, 3);
  EXPECT_EQ(Gate({clean, "--baseline", clean}).exit_code, 0);
}

// A hang line the gate cannot judge (a field missing, or another format_version) is skipped as
// `report` skips it, and said: never silently left out of a verdict that then passes.
TEST(GateCommand, LinesItCannotJudgeAreSaid) {
  Fixture f;
  const std::string path = f.dir / "some_bad.jsonl";
  std::string no_tid = report::Encode(Hang(kParse, {"Parse", "main"}, 300));
  const size_t at = no_tid.find("\"tid\":");
  ASSERT_NE(at, std::string::npos);
  no_tid.erase(at, no_tid.find(',', at) + 1 - at);
  std::string newer = report::Encode(Hang(kLoad, {"Load", "main"}, 300));
  const size_t v = newer.find("\"format_version\":1");
  ASSERT_NE(v, std::string::npos);
  newer.replace(v, 18, "\"format_version\":3");
  WriteFile(path, report::Encode(Hang(kRender, {"Render", "main"}, 300)) + "\n" + no_tid + "\n" +
                      newer + "\n");
  const auto r = Gate({path, "--max-hangs", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the one readable hang is within the budget
  EXPECT_TRUE(Has(r.err, "1 unreadable line skipped, not judged; first: line 2: field 'tid'"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "1 record of another format_version skipped, not judged")) << r.err;
}

TEST(GateCommand, WritesJunitMarkdownAndGithubAnnotations) {
  Fixture f;
  const std::string junit = f.dir / "junit.xml", md = f.dir / "summary.md";
  WriteFile(md, "earlier step\n");
  const auto r = Gate({f.now, "--baseline", f.old, "--junit", junit, "--markdown", md, "--github",
                       "--max-p99-ms", "40"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.out,
                  "::error file=/src/app/Render.cc,line=40,title=hangwatch%3A new hang::"
                  "main thread of app stalled in Render: 2 hangs, longest 700 ms"))
      << r.out;

  ExpectValidJunit(junit);
  const std::string xml = ReadFile(junit);
  EXPECT_TRUE(Has(xml, "tests=\"4\" failures=\"1\"")) << xml;  // 3 signatures + the p99 budget
  EXPECT_TRUE(Has(xml, "name=\"hang in Render\"")) << xml;
  EXPECT_TRUE(Has(xml, "name=\"hang in Parse\"")) << xml;
  EXPECT_TRUE(Has(xml, "name=\"hang in Load\"")) << xml;
  EXPECT_TRUE(Has(xml, "name=\"p99 pass duration at most 40 ms\"")) << xml;
  EXPECT_FALSE(Has(xml, "name=\"hang in " + std::string(kRender))) << xml;

  const std::string summary = ReadFile(md);
  EXPECT_EQ(summary.rfind("earlier step\n### hangwatch gate: ", 0), 0u) << summary;  // appended
  EXPECT_TRUE(Has(summary, "| `Render` | `/src/app/Render.cc:40` | 2 | 700 ms | app |")) << summary;
  EXPECT_TRUE(Has(summary, "| p99 | ")) << summary;
  EXPECT_TRUE(Has(summary, "\xE2\x89\xA4 40 ms \xE2\x9C\x85")) << summary;
}

TEST(GateCommand, HelpAndAnnotationsBesideJson) {
  const auto help = RunCommand({kCli, "gate", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: hangwatch gate REPORT...", 0), 0u) << help.out;
  EXPECT_TRUE(Has(help.out, "--max-slow-passes MS:N")) << help.out;

  // With --format json, stdout stays one JSON document and the annotations go to stderr,
  // with paths relative to $GITHUB_WORKSPACE.
  Fixture f;
  const auto r = RunCommand(
      {kCli, "gate", f.now, "--baseline", f.old, "--github", "--format", "json", "--no-symbolize"},
      {"GITHUB_WORKSPACE=/src"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["passed"], false);
  EXPECT_TRUE(Has(r.err, "::error file=app/Render.cc,line=40,")) << r.err;
}

// Two builds of one program: stall_program_relayout has padding code before the stalling
// function and another alignment, so code offsets and the build-id differ. The same stall
// must get the same signature (and a different fingerprint), and gating the new build's report
// against the old one's finds the hang known.
TEST(GateCommand, SignaturesMatchAcrossBuildsWithAnotherLayout) {
  TempDir dir;
  const std::string old_report = dir / "old.jsonl", new_report = dir / "new.jsonl";
  auto a = RunCommand({STALL_PROGRAM, "--agent", old_report, "0", "400"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = RunCommand({STALL_PROGRAM_RELAYOUT, "--agent", new_report, "0", "400"});
  ASSERT_EQ(b.exit_code, 0) << b.err;

  tools::Report before, after;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(old_report, &before, &error)) << error;
  ASSERT_TRUE(tools::ReadReportFile(new_report, &after, &error)) << error;
  ASSERT_FALSE(before.hangs.empty());
  ASSERT_FALSE(after.hangs.empty());
  const HangRecord& h0 = before.hangs[0];
  const HangRecord& h1 = after.hangs[0];
  EXPECT_EQ(h0.culprit.symbol, "StallTheMainThread");
  EXPECT_EQ(h1.culprit.symbol, "StallTheMainThread");
  // The premise: other builds, other layouts.
  ASSERT_FALSE(h0.culprit.module.empty());
  ASSERT_NE(h0.stacks[0].frames.size(), 0u);
  std::string id0, id1;
  for (const Frame& fr : h0.dominant()->frames) {
    if (fr.symbol == "StallTheMainThread") id0 = fr.build_id;
  }
  for (const Frame& fr : h1.dominant()->frames) {
    if (fr.symbol == "StallTheMainThread") id1 = fr.build_id;
  }
  EXPECT_NE(id0, id1);
  EXPECT_NE(h0.culprit.offset, h1.culprit.offset);
  EXPECT_NE(h0.fingerprint, h1.fingerprint);
  // The promise.
  ASSERT_EQ(h0.signature.size(), 16u);
  EXPECT_EQ(h0.signature, h1.signature);
  for (const HangRecord& h : after.hangs) EXPECT_EQ(h.signature, h0.signature);

  // Symbolized offline, as the gate does by default: still known, and the culprit has its line.
  auto r = RunCommand({kCli, "gate", new_report, "--baseline", old_report, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["new"].size(), 0u) << r.out;
  ASSERT_EQ(j["known"].size(), 1u) << r.out;
  EXPECT_EQ(j["known"][0]["signature"], h0.signature);
  EXPECT_EQ(j["known"][0]["culprit"], "StallTheMainThread");
  const std::string file = j["known"][0]["culprit_file"];
  EXPECT_TRUE(file.size() >= 17 && file.substr(file.size() - 17) == "/stall_program.cc") << file;
  EXPECT_GT(j["known"][0]["culprit_line"].get<int>(), 0);

  // Without the baseline the same hang is new and fails the gate.
  r = RunCommand({kCli, "gate", new_report, "--format", "json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["new"].size(), 1u);
  EXPECT_EQ(j["new"][0]["signature"], h0.signature);
}

// A Python program's hang in two runs of two interpreter builds: every code object elsewhere,
// the interpreter's functions moved and another build-id. The signature is the Python stack's,
// so the second run's hang is known against the first's baseline; the fingerprint, of one build,
// also ignores where the code objects were.
TEST(GateCommand, PythonHangOfAnotherRunAndInterpreterBuildIsKnown) {
  TempDir dir;
  const HangRecord before = PythonHang();
  const HangRecord after = PythonHang(/*code_shift=*/0x2340000, /*hang_id=*/1, "9e9e9e9e", 0x40);
  EXPECT_NE(before.stacks[0].frames[3].addr, after.stacks[0].frames[3].addr) << "the premise";
  ASSERT_EQ(before.signature.size(), 16u);
  EXPECT_EQ(after.signature, before.signature);
  EXPECT_EQ(PythonHang(0x2340000).fingerprint, before.fingerprint) << "another run, one build";
  WriteFile(dir / "old.jsonl", report::Encode(before) + "\n");
  // One record as an agent wrote it, one without signature (the gate computes it).
  HangRecord unsigned_after = after;
  unsigned_after.hang_id = 2;
  unsigned_after.signature.clear();
  WriteFile(dir / "new.jsonl",
            report::Encode(after) + "\n" + report::Encode(unsigned_after) + "\n");
  auto r = RunCommand({kCli, "gate", dir / "new.jsonl", "--baseline", dir / "old.jsonl", "--format",
                       "json", "--no-symbolize"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["new"].size(), 0u) << r.out;
  ASSERT_EQ(j["known"].size(), 1u) << r.out;
  EXPECT_EQ(j["known"][0]["signature"], before.signature);
  EXPECT_EQ(j["known"][0]["count"], 2);
  // The function, its file and line beside it, as a native culprit's.
  EXPECT_EQ(j["known"][0]["culprit"], "Handler.handle_request");
  EXPECT_EQ(j["known"][0]["culprit_file"], "/srv/app.py");
  EXPECT_EQ(j["known"][0]["culprit_line"], 42);
  const auto text = RunCommand({kCli, "gate", dir / "new.jsonl", "--no-symbolize"});
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_TRUE(Has(text.out, "new hang in Handler.handle_request (/srv/app.py:42)")) << text.out;
  // An allow list may name the Python function by its qualified name, or as py-spy prints it.
  for (const char* pattern : {"Handler.handle_*", "*(app.py:42)"}) {
    WriteFile(dir / "allow", std::string(pattern) + " # slow by design, ticket 7\n");
    r = RunCommand({kCli, "gate", dir / "new.jsonl", "--allow", dir / "allow", "--format", "json",
                    "--no-symbolize"});
    EXPECT_EQ(r.exit_code, 0) << pattern << r.err << r.out;
    j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["new"].size(), 1u) << r.out;
    EXPECT_FALSE(j["new"][0]["allowed"].is_null()) << pattern << r.out;
  }
}

}  // namespace
}  // namespace hangwatch::testing
