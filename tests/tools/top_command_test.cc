// `hangwatch top` end to end: reports written by a program embedding the agent and hand-made
// fleet lines, grouped in text and JSON; filters; bad files counted and skipped with a note;
// bad usage rejected with one line and exit status 2; culprits recorded without names
// symbolized offline as `hangwatch report` does (--search, --no-symbolize), and kept as recorded
// when their hang cannot be read again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "tools/top/top_group.h"
#include "tools/top/top_scan.h"
#include "tools/top/top_symbolize.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

// A hang line of a fleet: host, build label, start time, duration, signature, culprit.
std::string FleetLine(const std::string& host, const std::string& build, int64_t start,
                      int duration, const std::string& signature, const std::string& culprit) {
  nlohmann::json j = {{"type", "hang"},
                      {"format_version", 1},
                      {"pid", 4000 + static_cast<int>(host.size())},
                      {"tid", 1},
                      {"process", "/srv/app"},
                      {"process_name", "app"},
                      {"host", host},
                      {"labels", {{"build", build}}},
                      {"hang_id", 0},
                      {"start_unix_ms", start},
                      {"duration_ms", duration},
                      {"cpu_ms", duration / 2},
                      {"cpu_percent", 50},
                      {"samples", 3},
                      {"class", "mixed"},
                      {"fatal", false},
                      {"fingerprint", signature},
                      {"signature", signature},
                      {"culprit",
                       {{"symbol", culprit},
                        {"module", "/srv/app"},
                        {"offset", "0x10"},
                        {"file", "app.cc"},
                        {"line", 7},
                        {"frame", 0}}},
                      {"stacks", nlohmann::json::array()},
                      {"timeline", nlohmann::json::array()},
                      {"modules", nlohmann::json::array()}};
  return j.dump() + "\n";
}

// A report as a stripped binary's agent writes it: no function names, files or lines (and,
// when `module` is given, the module recorded at another path, as on another machine).
std::string Unsymbolized(const std::string& report, const std::string& module = "") {
  std::istringstream in(report);
  std::string out, line;
  auto strip = [&](nlohmann::json& f) {
    f.erase("symbol");
    f.erase("file");
    f.erase("line");
    if (!module.empty() && f.contains("module") && f["module"] == STALL_PROGRAM) {
      f["module"] = module;
    }
  };
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] == "hang") {
      for (auto& s : j["stacks"]) {
        for (auto& f : s["frames"]) strip(f);
      }
      strip(j["culprit"]);
      j["culprit"]["symbol"] = "";
    }
    out += j.dump() + "\n";
  }
  return out;
}

class TopCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    agent_report_ = *dir_ / "agent.jsonl";
    for (int i = 0; i < 2; ++i) {
      const auto r = RunCommand({STALL_PROGRAM, "--agent", agent_report_, "0", "300"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    fleet_ = *dir_ / "fleet.jsonl";
    std::string text;
    // 2025-11-21T00:00:00Z = 1763683200000; one hang per hour.
    for (int i = 0; i < 6; ++i) {
      text +=
          FleetLine("host-" + std::to_string(i % 3), i < 4 ? "17" : "18",
                    1763683200000 + i * 3600000LL, 200 + 100 * i, "1111111111111111", "LoadConfig");
    }
    text += FleetLine("host-9", "17", 1763683200000, 5000, "2222222222222222", "Compact");
    WriteFile(fleet_, text);
  }
  static void TearDownTestSuite() { delete dir_; }

  // The first line of the agent's report: one hang (the two hangs' culprits may be at other
  // instructions of the busy loop, so two groups by culprit).
  static std::string FirstHang() {
    const std::string text = ReadFile(agent_report_);
    const size_t at = text.find("{\"type\":\"hang\"");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) + 1 - at);
  }

  static CommandResult Top(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), {kCli, "top"});
    return RunCommand(args, env);
  }

  static TempDir* dir_;
  static std::string agent_report_, fleet_;
};
TempDir* TopCommand::dir_ = nullptr;
std::string TopCommand::agent_report_;
std::string TopCommand::fleet_;

TEST_F(TopCommand, GroupsTheAgentsHangsWithTheirCulprit) {
  const auto r = Top({agent_report_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(Has(r.out, "2 hangs in 1 group (by signature) from 1 file\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "StallTheMainThread")) << r.out;
  EXPECT_TRUE(Has(r.out, "stall_program")) << r.out;
  const auto json = Top({agent_report_, "--format", "json", "--by", "culprit"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto groups = nlohmann::json::parse(json.out);
  ASSERT_EQ(groups.size(), 1u) << json.out;
  EXPECT_EQ(groups[0]["count"], 2);
  EXPECT_EQ(groups[0]["processes"], 2);
  EXPECT_EQ(groups[0]["classes"]["busy"], 2);
  EXPECT_EQ(groups[0]["culprit"]["symbol"], "StallTheMainThread");
  EXPECT_EQ(groups[0]["examples"].size(), 2u);
  EXPECT_GE(groups[0]["duration_ms"]["max"].get<int>(), 200);
}

TEST_F(TopCommand, FleetJsonAcrossFilesAndFilters) {
  const auto r = Top({fleet_, agent_report_, "-f", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto groups = nlohmann::json::parse(r.out);
  ASSERT_EQ(groups.size(), 3u) << r.out;
  const auto& g = groups[0];
  EXPECT_EQ(g["key"], "1111111111111111");
  EXPECT_EQ(g["count"], 6);
  EXPECT_EQ(g["hosts"], 3);
  EXPECT_EQ(g["duration_ms"]["p50"], 400);
  EXPECT_EQ(g["duration_ms"]["p95"], 700);
  EXPECT_EQ(g["duration_ms"]["max"], 700);
  EXPECT_EQ(g["duration_ms"]["total"], 2700);
  EXPECT_EQ(g["classes"]["mixed"], 6);
  EXPECT_EQ(g["first_unix_ms"], 1763683200000);
  EXPECT_EQ(g["last_unix_ms"], 1763683200000 + 5 * 3600000LL);
  EXPECT_EQ(g["culprit"]["file"], "app.cc");

  // By total time the single 5 s Compact hang comes first.
  const auto total = nlohmann::json::parse(Top({fleet_, "-f", "json", "--sort", "total"}).out);
  EXPECT_EQ(total[0]["culprit"]["symbol"], "Compact");

  auto count = [&](std::vector<std::string> args) -> int {
    args.insert(args.begin(), fleet_);
    args.insert(args.end(), {"--format", "json"});
    const auto f = Top(args);
    EXPECT_EQ(f.exit_code, 0) << f.err;
    int n = 0;
    for (const auto& gr : nlohmann::json::parse(f.out)) n += gr["count"].get<int>();
    return n;
  };
  EXPECT_EQ(count({"--label", "build=17"}), 5);
  EXPECT_EQ(count({"--label", "build=18"}), 2);
  EXPECT_EQ(count({"--label=build=19"}), 0);
  EXPECT_EQ(count({"--since", "2025-11-21T02:00Z", "--until", "2025-11-21T04:00:00Z"}), 2);
  EXPECT_EQ(count({"--since", "1763683200000", "--until", "1763683200001"}), 2);
  EXPECT_EQ(count({"--since", "2025-11-21 03:00+01:00", "--label", "build=17"}), 2);  // 02:00Z
  EXPECT_EQ(count({"--since", "2025-11-22"}), 0);

  const auto text = Top({fleet_, "--limit", "1"});
  EXPECT_TRUE(Has(text.out, "LoadConfig (app.cc:7)")) << text.out;
  EXPECT_TRUE(Has(text.out, "... 1 more group")) << text.out;
}

TEST_F(TopCommand, BadFilesAreCountedAndSkippedWithANote) {
  std::string mixed = ReadFile(fleet_);
  mixed += "{\"type\":\"hang\",\"format_version\":1,\"pid\":1,\"stac\n";  // torn
  mixed += "{\"type\":\"hang\",\"format_version\":3,\"pid\":1}\n";
  mixed += "{\"type\":\"new_kind\",\"format_version\":1}\n";
  mixed += "\x01\x02 binary junk\n";
  WriteFile(*dir_ / "mixed.jsonl", mixed);
  const auto r = Top({*dir_ / "mixed.jsonl", "-f", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_TRUE(Has(r.err,
                  "mixed.jsonl: skipped 2 bad lines (torn or malformed), 1 record of an "
                  "unknown type, 1 record of another format_version"))
      << r.err;
  int n = 0;
  for (const auto& g : nlohmann::json::parse(r.out)) n += g["count"].get<int>();
  EXPECT_EQ(n, 7);

  WriteFile(*dir_ / "copy.jsonl", ReadFile(fleet_));
  const auto gz = RunCommand({"/bin/gzip", "-f", *dir_ / "copy.jsonl"});
  ASSERT_EQ(gz.exit_code, 0) << gz.err;
  const auto with_gz = Top({*dir_ / "copy.jsonl.gz", fleet_, *dir_ / "missing.jsonl"});
  EXPECT_EQ(with_gz.exit_code, 0) << with_gz.err;
  EXPECT_TRUE(Has(with_gz.err, "copy.jsonl.gz: skipped: gzip-compressed")) << with_gz.err;
  EXPECT_TRUE(Has(with_gz.err, "missing.jsonl: skipped: No such file")) << with_gz.err;
  EXPECT_TRUE(Has(with_gz.out, "7 hangs in 2 groups (by signature) from 1 file\n")) << with_gz.out;

  // Nothing readable at all: exit 2.
  const auto none = Top({*dir_ / "copy.jsonl.gz"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(Has(none.err, "hangwatch top: no file could be read\n")) << none.err;
}

TEST_F(TopCommand, BadUsageIsOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {fleet_, "--by", "colour"},
      {fleet_, "--format", "xml"},
      {fleet_, "--label", "novalue"},
      {fleet_, "--since", "yesterday"},
      {fleet_, "--until", "2025-02-30T99:00"},
      {fleet_, "--limit", "-3"},
      {fleet_, "--jobs", "0"},
      {fleet_, "--sort", "name"},
      {fleet_, "--bogus"},
      {fleet_, "--by"},
  };
  for (const auto& args : cases) {
    const auto r = Top(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << joined << r.err;
    EXPECT_EQ(r.err.rfind("hangwatch top: ", 0), 0u) << joined << r.err;
  }
  const auto help = Top({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: hangwatch top", 0), 0u) << help.out;
}

TEST_F(TopCommand, CulpritsRecordedWithoutNamesAreSymbolizedAsReportDoes) {
  TempDir tmp;
  // Its own index cache, and no debuginfod: only the binary on this machine answers.
  const std::vector<std::string> env = {"HANGWATCH_CACHE_DIR=" + tmp / "cache", "DEBUGINFOD_URLS="};
  const std::string bare = tmp / "bare.jsonl";
  WriteFile(bare, Unsymbolized(FirstHang()));

  const auto recorded = Top({bare, "-f", "json", "--no-symbolize"}, env);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  const auto as_recorded = nlohmann::json::parse(recorded.out).at(0)["culprit"];
  EXPECT_EQ(as_recorded["symbol"], "") << recorded.out;
  EXPECT_EQ(as_recorded["file"], "") << recorded.out;

  const auto r = Top({bare, "-f", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto culprit = nlohmann::json::parse(r.out).at(0)["culprit"];
  EXPECT_EQ(culprit["symbol"], "StallTheMainThread") << r.out;
  EXPECT_TRUE(Has(culprit["file"].get<std::string>(), "stall_program.cc")) << r.out;
  EXPECT_GT(culprit["line"].get<int>(), 0) << r.out;
  // The same culprit as `hangwatch report` finds for that hang.
  const auto report = RunCommand({kCli, "report", "--format", "json", bare}, env);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto hang = nlohmann::json::parse(report.out.substr(0, report.out.find('\n')));
  EXPECT_EQ(culprit["symbol"], hang["culprit"]["symbol"]) << report.out;
  EXPECT_EQ(culprit["file"], hang["culprit"]["file"]) << report.out;
  EXPECT_EQ(culprit["line"], hang["culprit"]["line"]) << report.out;
  EXPECT_EQ(culprit["offset"], hang["culprit"]["offset"]) << report.out;

  const auto text = Top({bare}, env);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Has(text.out, "StallTheMainThread (stall_program.cc:")) << text.out;

  // Recorded on another machine: the binary is found by build-id with --search only.
  const std::string moved = tmp / "moved.jsonl";
  WriteFile(moved, Unsymbolized(FirstHang(), "/nonexistent/stall_program"));
  const auto missing = Top({moved, "-f", "json"}, env);
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  EXPECT_EQ(nlohmann::json::parse(missing.out).at(0)["culprit"]["file"], "") << missing.out;
  EXPECT_TRUE(Has(missing.err, "hangwatch top: warning: ")) << missing.err;
  const auto found = Top({moved, "-f", "json", "--search", STALL_PROGRAM}, env);
  ASSERT_EQ(found.exit_code, 0) << found.err;
  const auto found_culprit = nlohmann::json::parse(found.out).at(0)["culprit"];
  EXPECT_EQ(found_culprit["symbol"], "StallTheMainThread") << found.out;
  EXPECT_EQ(found_culprit["line"], culprit["line"]) << found.out;
}

TEST_F(TopCommand, AHangThatCannotBeReadAgainKeepsItsRecordedCulprit) {
  TempDir tmp;
  const std::string path = tmp / "changing.jsonl";
  const std::string bare = Unsymbolized(FirstHang());
  WriteFile(path, bare);
  const std::vector<std::string> paths = {path};
  const tools::TopQuery query;
  std::vector<std::unique_ptr<tools::TopSink>> sinks;
  tools::ScanTopFiles(
      paths, {}, [&] { return std::make_unique<tools::TopAggregator>(query); }, &sinks);
  tools::TopAggregator all(query);
  for (auto& s : sinks) all.Merge(std::move(static_cast<tools::TopAggregator&>(*s)));
  const std::vector<tools::TopGroup> groups = all.Groups(tools::TopSort::kCount);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_TRUE(groups[0].culprit && groups[0].culprit_line);
  tools::ReportSymbolizeOptions options;
  options.symbolizer.cache_dir = tmp / "cache";
  options.symbolizer.debuginfod = false;

  auto symbolized = [&](std::vector<std::string>* notes) {
    std::vector<tools::TopGroup> g = groups;
    std::vector<std::string> warnings;
    tools::SymbolizeTopCulprits(paths, options, 0, &g, notes, &warnings);
    return *g[0].culprit;
  };
  std::vector<std::string> notes;
  const tools::TopCulprit fine = symbolized(&notes);
  EXPECT_EQ(fine.symbol, "StallTheMainThread");
  EXPECT_GT(fine.line, 0);
  EXPECT_TRUE(notes.empty());

  // Rewritten since the scan: empty, garbage where the line was, another hang there (a valid
  // record with another culprit), gone.
  nlohmann::json other = nlohmann::json::parse(bare.substr(0, bare.find('\n')));
  other["culprit"]["offset"] = "0x1";
  const std::vector<std::string> changes = {"", "xxxx" + bare, other.dump() + "\n", "(deleted)"};
  for (const std::string& change : changes) {
    if (change == "(deleted)") {
      unlink(path.c_str());
    } else {
      WriteFile(path, change);
    }
    notes.clear();
    const tools::TopCulprit c = symbolized(&notes);
    EXPECT_EQ(c.symbol, "") << change.substr(0, 40);
    EXPECT_EQ(c.file, "") << change.substr(0, 40);
    EXPECT_EQ(c.offset, groups[0].culprit->offset) << change.substr(0, 40);
    ASSERT_EQ(notes.size(), 1u) << change.substr(0, 40);
    EXPECT_TRUE(Has(notes[0], path + ": the hang at byte 0 cannot be read again")) << notes[0];
  }
}

}  // namespace
}  // namespace hangwatch::testing
