// `hangwatch report --format html` in headless Chromium, driven by puppeteer-core
// (tests/tools/html/browser_check.js, which prints what it saw as JSON; the assertions are
// here). The page is made from a real program's hang (stall_program, symbolized offline, with
// its source line) and 300 synthetic hangs (report_html_fixture), busy and blocked ones sharing
// a signature among them. The screenshots land in SCREENSHOT_DIR; report-light.png is the one
// docs/reports.md shows (docs/images/report-html.png).
//
// A second page of 10k synthetic hangs is loaded a few times; the time until it is
// interactive is printed, not asserted (bench/report_html_bench.sh measures it too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cli_util.h"
#include "hangwatch/pass_histogram.h"
#include "nlohmann/json.hpp"
#include "report/stack_identity.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

using nlohmann::json;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "393 ms", "5.54 s", "2 min 3 s" -> ms (as the page's fmtMs writes them).
double Ms(const std::string& text) {
  const double v = std::stod(text);
  if (Has(text, "min")) return v * 60000;
  return Has(text, " ms") ? v : v * 1000;
}

CommandResult Node(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {NODE, BROWSER_CHECK};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {std::string("NODE_PATH=") + NODE_MODULES});
}

class ReportHtmlBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const std::vector<std::string> env = {"HANGWATCH_CACHE_DIR=" + *dir_ / "cache"};
    const auto real = RunCommand({STALL_PROGRAM, "--agent", *dir_ / "real.jsonl", "0", "400"});
    ASSERT_EQ(real.exit_code, 0) << real.err;
    const auto synthetic = RunCommand({HTML_FIXTURE, "300", "3"});
    ASSERT_EQ(synthetic.exit_code, 0) << synthetic.err;
    WriteFile(*dir_ / "synthetic.jsonl", synthetic.out);
    for (const char* f : {"real.jsonl", "synthetic.jsonl"}) {
      tools::Report one;
      std::string error;
      ASSERT_TRUE(tools::ReadReportFile(*dir_ / f, &one, &error)) << error;
      tools::MergeReport(std::move(one), &input_);
    }
    // Symbolized: the synthetic modules are nowhere (warnings), the real program is.
    const auto page = RunCommand(
        {HANGWATCH_CLI, "report", *dir_ / "real.jsonl", *dir_ / "synthetic.jsonl", "--format",
         "html", "--title", "stall_program and 300 synthetic hangs", "-o", *dir_ / "page.html"},
        env);
    ASSERT_EQ(page.exit_code, 0) << page.err;
    const auto run = Node({"interact", *dir_ / "page.html", SCREENSHOT_DIR});
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    seen_ = json::parse(run.out);
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    if (seen_.is_null()) GTEST_SKIP() << "the browser run failed (SetUpTestSuite)";
  }

  // The flame graph box named `name` in `boxes`, or null.
  static json Box(const json& boxes, const std::string& name) {
    for (const json& b : boxes) {
      if (b["name"] == name) return b;
    }
    return nullptr;
  }

  static TempDir* dir_;
  static tools::Report input_;
  static json seen_;
};
TempDir* ReportHtmlBrowser::dir_ = nullptr;
tools::Report ReportHtmlBrowser::input_;
json ReportHtmlBrowser::seen_;

TEST_F(ReportHtmlBrowser, LoadsWithoutAnErrorOrARequestLeavingThePage) {
  EXPECT_EQ(seen_["console"], json::array()) << seen_["console"].dump();
  EXPECT_EQ(seen_["requests"], json::array()) << seen_["requests"].dump();
  std::printf("301 hangs: interactive %.0f ms after the navigation started\n",
              seen_["ready_ms"].get<double>());
}

TEST_F(ReportHtmlBrowser, SummaryCountsTheHangsByClass) {
  size_t busy = 0, blocked = 0;
  uint64_t total = 0;
  for (const HangRecord& h : input_.hangs) {
    busy += h.hang_class == HangClass::kBusy;
    blocked += h.hang_class == HangClass::kBlocked;
    total += h.duration_ms;
  }
  ASSERT_EQ(input_.hangs.size(), 301u);
  ASSERT_GT(busy, 0u);
  ASSERT_GT(blocked, 0u);
  const json& s = seen_["summary"];
  EXPECT_EQ(s["hangs"], "301");
  EXPECT_EQ(s["total"], std::to_string(total) + " ms");
  EXPECT_EQ(s["by_class"], json({{"busy", busy}, {"blocked", blocked}})) << s.dump();
}

TEST_F(ReportHtmlBrowser, SummaryHasTheLagPercentilesOfAllRecords) {
  ASSERT_EQ(input_.lags.size(), 20u);
  PassHistogram all;
  for (const tools::Lag& l : input_.lags) all.Merge(l.passes);
  const LagFigures f = all.Figures();
  const json& lag = seen_["summary"]["lag"];
  ASSERT_TRUE(lag.is_object()) << seen_["summary"].dump();
  EXPECT_NEAR(lag["figures"]["p50"].get<double>(), f.p50_ms, 1e-9);
  EXPECT_NEAR(lag["figures"]["p90"].get<double>(), f.p90_ms, 1e-9);
  EXPECT_NEAR(lag["figures"]["p99"].get<double>(), f.p99_ms, 1e-9);
  EXPECT_NEAR(lag["figures"]["max"].get<double>(), f.max_ms, 1e-9);
  // One bar per power of two from the shortest pass to the longest: 0.2 ms to 2.3 s.
  EXPECT_GE(lag["bars"].get<int>(), 13);
  EXPECT_LE(lag["bars"].get<int>(), 16);
  EXPECT_TRUE(Has(lag["text"], "lag: " + std::to_string(f.passes) +
                                   " passes timed in 20 "
                                   "records, 5 processes"))
      << lag["text"];
}

TEST_F(ReportHtmlBrowser, TableSortsAndFilters) {
  const json& t = seen_["table"];
  // A Host column: the records have host names.
  EXPECT_EQ(t["headers"],
            json({"Time (UTC)", "Process", "Host", "Class", "Duration", "CPU", "Culprit"}));
  EXPECT_EQ(t["count"], "301 hangs");
  // Only the rows in view exist.
  EXPECT_GT(t["rendered_rows"].get<int>(), 10);
  EXPECT_LT(t["rendered_rows"].get<int>(), 100);
  std::vector<double> down, up;
  for (const auto& d : t["durations_default"]) down.push_back(Ms(d));
  for (const auto& d : t["durations_after_click"]) up.push_back(Ms(d));
  ASSERT_GT(down.size(), 10u);
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend())) << t["durations_default"].dump();
  EXPECT_TRUE(std::is_sorted(up.begin(), up.end())) << t["durations_after_click"].dump();
  uint64_t longest = 0, shortest = ~0ull;
  for (const HangRecord& h : input_.hangs) {
    longest = std::max(longest, h.duration_ms);
    shortest = std::min(shortest, h.duration_ms);
  }
  EXPECT_NEAR(down[0], static_cast<double>(longest), static_cast<double>(longest) / 100 + 1);
  EXPECT_NEAR(up[0], static_cast<double>(shortest), 1);

  EXPECT_EQ(seen_["filter"]["count"], "1 of 301 hangs");
  EXPECT_EQ(seen_["filter"]["culprits"], json::array({"StallTheMainThread"}));
}

TEST_F(ReportHtmlBrowser, ClickingAHangShowsItsFlameGraphCulpritSourceAndTimeline) {
  const json& h = seen_["hang"];
  EXPECT_EQ(h["culprit"], "StallTheMainThread");
  EXPECT_TRUE(Has(h["location"], "stall_program.cc:")) << h["location"];
  // The culprit's line as it is in the source file, with its number.
  const std::string location = h["location"];
  const std::string file = location.substr(0, location.find(':'));
  const int line = std::stoi(location.substr(location.find(':') + 1));
  const std::string source = ReadFile(file);
  size_t at = 0;
  for (int i = 1; i < line; ++i) at = source.find('\n', at) + 1;
  const std::string text = source.substr(at, source.find('\n', at) - at);
  EXPECT_EQ(h["source_line"], std::to_string(line) + text);

  const HangRecord& real = input_.hangs[0];
  EXPECT_EQ(h["state_cells"], real.timeline.size());
  EXPECT_TRUE(Has(h["runs"], " ms in StallTheMainThread")) << h["runs"];
  EXPECT_EQ(h["text_head"][0], "1 hang");
  EXPECT_EQ(h["hash"], "#hang=0");

  const json& boxes = h["flame"]["boxes"];
  ASSERT_GT(boxes.size(), 3u);
  EXPECT_EQ(boxes[0]["name"], "busy hang (" + std::to_string(real.samples) + " samples)");
  EXPECT_TRUE(boxes[0]["root"].get<bool>());
  const json culprit = Box(boxes, "StallTheMainThread");
  ASSERT_FALSE(culprit.is_null()) << boxes.dump();
  EXPECT_TRUE(culprit["culprit"].get<bool>());
  EXPECT_FALSE(Box(boxes, "main").is_null());

  // Copied, or selected for Ctrl+C when the page may not write the clipboard.
  const json& copy = seen_["copy"];
  EXPECT_TRUE(copy["note"] == "copied" ||
              (copy["note"] == "selected: press Ctrl+C" && copy["selected_is_text"] == true))
      << copy.dump();

  const json& tip = seen_["tooltip"];
  EXPECT_FALSE(tip["hidden"].get<bool>());
  const std::string tip_text = tip["text"];
  EXPECT_EQ(tip_text.rfind("StallTheMainThread\n", 0), 0u) << tip_text;
  EXPECT_TRUE(Has(tip_text, "stall_program.cc:" + std::to_string(line))) << tip_text;
  EXPECT_TRUE(Has(tip_text, std::string(STALL_PROGRAM) + " · application")) << tip_text;
  EXPECT_TRUE(Has(tip_text, " samples (")) << tip_text;
}

TEST_F(ReportHtmlBrowser, ClickingAFrameZoomsIntoIt) {
  const json& z = seen_["zoom"];
  const double width = z["container"];
  EXPECT_LT(z["before"].get<double>(), width / 2) << z.dump();
  EXPECT_NEAR(z["after"].get<double>(), width, 1) << z.dump();
  // Its callers stay above it, its siblings are gone; Reset zoom shows the whole graph again.
  const json& above = z["above"];
  EXPECT_NE(std::find(above.begin(), above.end(), "app::EventLoop::runOnce()"), above.end())
      << above.dump();
  EXPECT_EQ(z["same_row"], 1);
  EXPECT_NEAR(z["after_reset"].get<double>(), z["before"].get<double>(), 0.5);
}

TEST_F(ReportHtmlBrowser, SearchHighlightsTheMatchingFrames) {
  const json& s = seen_["search"];
  EXPECT_EQ(s["matches"], json::array({"StallTheMainThread"}));
  ASSERT_GT(s["others"].size(), 2u);
  for (const auto& name : s["others"]) EXPECT_FALSE(Has(Lower(name), "stall")) << name;
  EXPECT_EQ(s["status"], "1 function match, in 100% of the samples");
}

TEST_F(ReportHtmlBrowser, KeyboardMovesThroughTheTableAndTheFlameGraph) {
  // The default order: longest first (ties in file order). Home, then j twice: the third.
  std::vector<size_t> order(input_.hangs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return input_.hangs[a].duration_ms > input_.hangs[b].duration_ms;
  });
  const json& k = seen_["keyboard"];
  EXPECT_EQ(k["before"], order[0]);
  EXPECT_EQ(k["after"], order[2]);
  // Its timeline in words: one "N ms in F" per run of samples with the same function on top
  // (the culprit of each sample's stack), the first six of them.
  const HangRecord& h = input_.hangs[order[2]];
  std::vector<std::string> runs;
  for (const TimelineEntry& e : h.timeline) {
    std::string top = "(capture failed)";
    for (const Stack& s : h.stacks) {
      if (s.id == e.stack) top = s.frames[static_cast<size_t>(report::FindCulprit(s).frame)].symbol;
    }
    if (runs.empty() || runs.back() != top) runs.push_back(top);
  }
  ASSERT_FALSE(runs.empty());
  const std::string words = k["runs"];
  size_t thens = 0;
  for (size_t at = words.find(", then "); at != std::string::npos;
       at = words.find(", then ", at + 1))
    ++thens;
  EXPECT_EQ(thens, std::min<size_t>(runs.size(), 6) - 1) << words;
  EXPECT_TRUE(Has(words, " ms in " + runs[0]) || Has(words, " s in " + runs[0])) << words;
  // f focuses the first root; two steps down the heaviest callees; Enter zooms there.
  EXPECT_TRUE(Has(k["focus1"], " hang (")) << k["focus1"];
  const json& full = k["zoomed_full_width"];
  EXPECT_NE(std::find(full.begin(), full.end(), k["focus2"]), full.end()) << k.dump();
  EXPECT_NE(k["focus2"], k["focus1"]);
}

TEST_F(ReportHtmlBrowser, GroupedBySignatureBusyAndBlockedKeepTheirOwnRoots) {
  const json& g = seen_["groups"];
  EXPECT_EQ(g["headers"], json({"Hangs", "Total", "Longest", "Classes", "Culprit"}));
  ASSERT_EQ(g["rows"].size(), 1u) << g.dump();
  EXPECT_EQ(g["rows"][0][4], "app::Storage::flushSegment(int)");
  EXPECT_TRUE(Has(g["rows"][0][3], "busy ")) << g["rows"][0][3];
  EXPECT_TRUE(Has(g["rows"][0][3], "blocked ")) << g["rows"][0][3];
  const json& roots = g["roots"];
  ASSERT_EQ(roots.size(), 2u) << roots.dump();
  std::vector<std::string> names;
  for (const auto& r : roots) {
    EXPECT_TRUE(r["root"].get<bool>());
    names.push_back(r["name"].get<std::string>().substr(0, r["name"].get<std::string>().find(' ')));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"blocked", "busy"}));
}

TEST_F(ReportHtmlBrowser, LongNamesAreCutAndWholeOnHover) {
  const json& l = seen_["long"];
  ASSERT_TRUE(l["name"].is_string()) << l.dump();
  const std::string name = l["name"];
  EXPECT_GT(name.size(), 250u);
  EXPECT_TRUE(l["truncated"].get<bool>());
  EXPECT_LE(l["width"].get<double>(), l["container"].get<double>());
  EXPECT_EQ(l["tooltip"], name);
  EXPECT_TRUE(l["cell"]["truncated"].get<bool>());
  EXPECT_EQ(l["cell"]["title"].get<std::string>().rfind(name, 0), 0u);
}

TEST_F(ReportHtmlBrowser, ScreenshotsAreNotBlankInLightAndDark) {
  for (const char* shot : {"screenshot_hang", "screenshot_search", "screenshot_groups",
                           "screenshot_light", "screenshot_dark"}) {
    const json& s = seen_[shot];
    EXPECT_EQ(s["width"], 1400) << shot;
    EXPECT_EQ(s["height"], 900) << shot;
    // A blank page has one colour; text, boxes and strips give hundreds.
    EXPECT_GT(s["distinct"].get<int>(), 200) << shot;
    EXPECT_EQ(ReadFile(s["file"]).substr(1, 3), "PNG") << shot;
    std::printf("%s: %s, %d colours\n", shot, s["file"].get<std::string>().c_str(),
                s["distinct"].get<int>());
  }
  EXPECT_EQ(seen_["background_light"], "rgb(251, 251, 248)");
  EXPECT_EQ(seen_["background_dark"], "rgb(23, 24, 27)");
}

// 10k hangs: the page is at most 1.5x its JSON Lines and becomes interactive; how fast is
// printed (this VM's machine is shared: a timing is not a pass/fail criterion).
// The README's demo (a real program: its lock stall waits for a mutex a thread named
// "lock-holder" holds): the hang's cause line, and the main thread's stack beside the holder's.
TEST(ReportHtmlBrowserCause, TheLockHangShowsItsCauseAndTheHoldersStackBesideTheMainThreads) {
  TempDir dir;
  const auto demo = RunCommand({DEMO_PROGRAM, "--json", dir / "demo.jsonl"});
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  const auto page = RunCommand(
      {HANGWATCH_CLI, "report", dir / "demo.jsonl", "--format", "html", "-o", dir / "demo.html"},
      {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const auto run = Node({"cause", dir / "demo.html", "lock-holder"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const json seen = json::parse(run.out);
  EXPECT_EQ(seen["console"], json::array()) << seen["console"].dump();
  const json& c = seen["cause"];
  ASSERT_TRUE(c.is_object()) << run.out;
  EXPECT_EQ(c["heading"], "Why it waited");
  const std::string text = c["text"];
  EXPECT_EQ(text.rfind("lock waiting for mutex 0x", 0), 0u) << text;
  EXPECT_TRUE(Has(text, "\"lock-holder\"")) << text;
  const json& columns = c["columns"];
  ASSERT_GE(columns.size(), 2u) << c.dump();
  EXPECT_EQ(columns[0]["id"], "stack-main");
  EXPECT_TRUE(Has(columns[0]["title"], "main thread")) << columns[0].dump();
  EXPECT_TRUE(Has(columns[1]["title"], "\"lock-holder\"")) << columns[1].dump();
  EXPECT_TRUE(Has(columns[1]["sub"], "holds mutex 0x")) << columns[1].dump();
  for (const json& col : columns) {
    EXPECT_GT(col["frames"].size(), 1u) << col.dump();
    EXPECT_EQ(col["marked"].size(), 1u) << col.dump();  // its culprit
  }
  // Beside each other, not one under the other.
  EXPECT_EQ(columns[0]["top"], columns[1]["top"]);
  EXPECT_LT(columns[0]["left"].get<double>(), columns[1]["left"].get<double>());
}

TEST(ReportHtmlBrowserScale, TenThousandHangs) {
  TempDir dir;
  const auto gen = RunCommand({HTML_FIXTURE, "10000", "1"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  WriteFile(dir / "big.jsonl", gen.out);
  const auto page = RunCommand({HANGWATCH_CLI, "report", dir / "big.jsonl", "--no-symbolize",
                                "--format", "html", "-o", dir / "big.html"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const double in = static_cast<double>(gen.out.size());
  const double out = static_cast<double>(ReadFile(dir / "big.html").size());
  EXPECT_LE(out, 1.5 * in);
  const auto run = Node({"load", dir / "big.html", "3"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const json seen = json::parse(run.out);
  EXPECT_EQ(seen["console"], json::array()) << seen["console"].dump();
  EXPECT_EQ(seen["requests"], json::array()) << seen["requests"].dump();
  EXPECT_EQ(seen["rows"], "10000 hangs");
  for (const auto& c : seen["click_ms"]) EXPECT_GE(c.get<double>(), 0) << "no flame graph";
  std::printf(
      "10000 hangs: JSON Lines %.1f MB, HTML %.1f MB (%.2fx); interactive after %s ms "
      "(median %.0f ms); click to flame graph %.0f ms (median)\n",
      in / 1e6, out / 1e6, out / in, seen["ready_ms"].dump().c_str(),
      seen["ready_median_ms"].get<double>(), seen["click_median_ms"].get<double>());
}

}  // namespace
}  // namespace hangwatch::testing
