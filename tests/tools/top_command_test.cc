// `hangwatch top` end to end: reports written by a program embedding the agent and hand-made
// fleet lines, grouped in text and JSON; filters; bad files counted and skipped with a note;
// bad usage rejected with one line and exit status 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

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

  static CommandResult Top(std::vector<std::string> args) {
    args.insert(args.begin(), {kCli, "top"});
    return RunCommand(args);
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
  mixed += "{\"type\":\"hang\",\"format_version\":2,\"pid\":1}\n";
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

}  // namespace
}  // namespace hangwatch::testing
