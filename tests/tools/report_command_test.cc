// `hangwatch report` end to end: a report written by a program embedding the agent, printed in
// every format; the SVG rendered by headless Chromium; bad input rejected with one line and
// exit status 2.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "trace_check.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

class ReportCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    report_ = *dir_ / "hangs.jsonl";
    // Symbol index cache inside the temporary directory, not in $HOME.
    env_ = {"HANGWATCH_CACHE_DIR=" + *dir_ / "cache"};
    const auto r = RunCommand({STALL_PROGRAM, "--agent", report_, "0", "400"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  static CommandResult Report(std::vector<std::string> args) {
    args.insert(args.begin(), {kCli, "report"});
    return RunCommand(args, env_);
  }

  static TempDir* dir_;
  static std::string report_;
  static std::vector<std::string> env_;
};
TempDir* ReportCommand::dir_ = nullptr;
std::string ReportCommand::report_;
std::vector<std::string> ReportCommand::env_;

TEST_F(ReportCommand, TextNamesTheCulpritWithItsSourceLine) {
  const auto r = Report({report_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "1 hang\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "Process:          " STALL_PROGRAM)) << r.out;
  EXPECT_TRUE(Has(r.out, "Class:            busy")) << r.out;
  EXPECT_TRUE(Has(r.out, "Binary Images:")) << r.out;
  // Offline symbolization adds the file and line from the program's DWARF.
  EXPECT_TRUE(Has(r.out, "StallTheMainThread  ")) << r.out;
  EXPECT_TRUE(Has(r.out, "stall_program.cc:")) << r.out;
  // Without symbolization: what the agent recorded (names, no lines).
  const auto raw = Report({report_, "--no-symbolize"});
  EXPECT_TRUE(Has(raw.out, "StallTheMainThread\n")) << raw.out;
  EXPECT_FALSE(Has(raw.out, "stall_program.cc:")) << raw.out;
}

TEST_F(ReportCommand, FoldedJsonAndTrace) {
  const auto folded = Report({report_, "--format", "folded"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_TRUE(Has(folded.out, ";main;StallTheMainThread ")) << folded.out;

  const auto json = Report({report_, "--format=json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto line = nlohmann::json::parse(json.out.substr(0, json.out.find('\n')));
  EXPECT_EQ(line["type"], "hang");
  EXPECT_EQ(line["stacks"][0]["frames"][0]["symbol"], "StallTheMainThread");
  EXPECT_TRUE(line["stacks"][0]["frames"][0].contains("line"));

  const auto trace = Report({report_, "-f", "trace", "-o", *dir_ / "trace.json"});
  ASSERT_EQ(trace.exit_code, 0) << trace.err;
  const std::string t = ReadFile(*dir_ / "trace.json");
  EXPECT_EQ(CheckTraceEvents(t), "") << t;
  EXPECT_TRUE(Has(t, "\"name\":\"StallTheMainThread\"")) << t;
}

// Chromium renders the flame graph and lays out the culprit's box with a real size.
TEST_F(ReportCommand, SvgRendersInChromiumWithTheCulpritsBox) {
  const auto svg = Report({report_, "--format", "svg", "-o", *dir_ / "flame.svg"});
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  std::string body = ReadFile(*dir_ / "flame.svg");
  body.erase(0, body.find("<svg"));  // inline in HTML: no XML declaration
  WriteFile(*dir_ / "page.html",
            "<!DOCTYPE html><html><body>" + body +
                "<script>\n"
                "let found = 'none';\n"
                "for (const g of document.querySelectorAll('g.frame')) {\n"
                "  const title = g.querySelector('title').textContent;\n"
                "  if (!title.startsWith('StallTheMainThread ')) continue;\n"
                "  const box = g.querySelector('rect').getBoundingClientRect();\n"
                "  const label = g.querySelector('text');\n"
                "  found = 'culprit ' + Math.round(box.width) + 'x' + Math.round(box.height) +\n"
                "          ' label ' + (label ? label.getComputedTextLength() > 0 : false);\n"
                "}\n"
                "document.body.setAttribute('data-result', found);\n"
                "</script></body></html>\n");
  const auto chrome = RunCommand(
      {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + *dir_ / "chromium", "--dump-dom", "file://" + *dir_ / "page.html"});
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  const size_t at = chrome.out.find("data-result=\"culprit ");
  ASSERT_NE(at, std::string::npos) << chrome.out.substr(0, 400) << chrome.err;
  const std::string result = chrome.out.substr(at, chrome.out.find('"', at + 13) - at);
  // The culprit took every sample: the full width (1180 px) and one row (16 px), labelled.
  EXPECT_TRUE(Has(result, "culprit 1180x16 label true")) << result;
}

TEST_F(ReportCommand, OneHangAndSeveralFiles) {
  const auto two = Report({report_, report_, "--format", "folded", "--no-symbolize"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto one = Report({report_, "--format", "folded", "--no-symbolize"});
  EXPECT_NE(two.out, one.out) << "counts add up over files";
  const auto second = Report({report_, report_, "--hang", "1", "--no-symbolize"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(Has(second.out, "1 hang\n")) << second.out;
  const auto none = Report({report_, "--hang", "5"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(CountLines(none.err), 1u) << none.err;
}

TEST_F(ReportCommand, AFleetsFilesThatCannotBeReadAreSkippedWithANote) {
  // A directory of reports from many machines: one rotated and compressed by logrotate, one
  // that is not a report, one gone. The rest is reported; each skipped file gets one line.
  WriteFile(*dir_ / "rotated.jsonl.1.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8));
  WriteFile(*dir_ / "notes.txt", "this is not a report\n");
  const auto r = Report({*dir_ / "rotated.jsonl.1.gz", report_, *dir_ / "notes.txt",
                         *dir_ / "gone.jsonl", "--no-symbolize"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "1 hang\n")) << r.out;
  EXPECT_EQ(CountLines(r.err), 3u) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch report: skipped " + *dir_ / "rotated.jsonl.1.gz" +
                             ": gzip-compressed (decompress it first"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch report: skipped " + *dir_ / "notes.txt" + ": malformed"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch report: skipped " + *dir_ / "gone.jsonl" + ": ")) << r.err;

  // Nothing readable at all: one line, exit 2; a single file says why.
  const auto none = Report({*dir_ / "rotated.jsonl.1.gz", *dir_ / "notes.txt"});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_EQ(none.err, "hangwatch report: skipped " + *dir_ / "rotated.jsonl.1.gz" +
                          ": gzip-compressed (decompress it first: zcat FILE > FILE.jsonl)\n" +
                          "hangwatch report: skipped " + *dir_ / "notes.txt" +
                          ": malformed report: no valid record (line 1: not a JSON object)\n" +
                          "hangwatch report: no report file could be read\n");
  const auto gz = Report({*dir_ / "rotated.jsonl.1.gz"});
  EXPECT_EQ(gz.exit_code, 2) << gz.err;
  EXPECT_EQ(CountLines(gz.err), 1u) << gz.err;
  EXPECT_TRUE(Has(gz.err, "gzip-compressed")) << gz.err;
}

TEST_F(ReportCommand, BadInputIsOneLineAndExitTwo) {
  WriteFile(*dir_ / "garbage", "this is not a report\n");
  WriteFile(*dir_ / "truncated-open-hang", "HWOPENHG\x01\x02");
  const std::vector<std::vector<std::string>> cases = {
      {},
      {report_, "--format", "pdf"},
      {report_, "--bogus"},
      {report_, "--format"},
      {report_, "--hang", "x"},
      {*dir_ / "missing.jsonl"},
      {dir_->path()},
      {*dir_ / "garbage"},
      {*dir_ / "truncated-open-hang"},
      {report_, "-o", "/nonexistent-dir/out.txt"},
  };
  for (const auto& args : cases) {
    const auto r = Report(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << joined << r.err;
    EXPECT_EQ(r.err.rfind("hangwatch report: ", 0), 0u) << joined << r.err;
  }
}

// With stdout on a terminal (script(1)'s), a binary format wants -o FILE instead of filling the
// screen with bytes; a text format is printed.
TEST_F(ReportCommand, BinaryFormatOnATerminalWantsAnOutputFile) {
  auto on_terminal = [](const std::string& args) {
    const std::string command = "'" + kCli + "' report '" + report_ + "' --no-symbolize " + args;
    return RunCommand({"/usr/bin/script", "-qec", command, "/dev/null"}, env_);
  };
  const auto pprof = on_terminal("--format pprof");
  EXPECT_EQ(pprof.exit_code, 2) << pprof.out;
  EXPECT_EQ(pprof.out, "hangwatch report: --format pprof writes binary: give -o FILE.pb.gz\r\n");
  const std::string file = *dir_ / "terminal.pb.gz";
  const auto to_file = on_terminal("--format pprof -o '" + file + "'");
  EXPECT_EQ(to_file.exit_code, 0) << to_file.out;
  EXPECT_EQ(to_file.out, "");
  EXPECT_EQ(ReadFile(file).substr(0, 2), "\x1f\x8b") << "gzip";
  const auto svg = on_terminal("--format svg");
  EXPECT_EQ(svg.exit_code, 0) << svg.out;
  EXPECT_TRUE(Has(svg.out, "<svg ")) << svg.out;
}

TEST_F(ReportCommand, HelpForEverySubcommand) {
  for (const char* sub : {"report", "run"}) {
    const auto r = RunCommand({kCli, sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_EQ(r.out.rfind(std::string("usage: hangwatch ") + sub, 0), 0u) << r.out;
  }
}

}  // namespace
}  // namespace hangwatch::testing
