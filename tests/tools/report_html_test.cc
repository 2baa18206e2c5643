// `hangwatch report --format html` without a browser: the page is one self-contained file, its
// data deduplicated and no larger than 1.5x the JSON Lines it came from, names from the report
// cannot break out of it, each hang's text inflates to FormatText's, the culprit's source
// lines are embedded; the command line. The page in a real browser: report_html_browser_test.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <string>

#include "cli_util.h"
#include "hangwatch/pass_histogram.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/cause_text.h"
#include "report/report_record.h"
#include "tests/sanitizer_allocator.h"
#include "thread_lines.h"
#include "tools/reader/report_frames.h"
#include "tools/reader/report_reader.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::CountLines;
using hangwatch::testing::ReadFile;
using hangwatch::testing::RunCommand;
using hangwatch::testing::TempDir;
using hangwatch::testing::WriteFile;
using nlohmann::json;

Report Load(const std::string& name) {
  Report r;
  std::string error;
  EXPECT_TRUE(ParseJsonLines(ReadFile(std::string(FUZZ_CORPUS_DIR) + "/" + name), &r, &error))
      << error;
  return r;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The lines of the hang details (base64, one per chunk).
std::vector<std::string> Details(const std::string& page) {
  const std::string open = "<script type=\"text/plain\" id=\"hw-details\">\n";
  const size_t begin = page.find(open) + open.size();
  const std::string text = page.substr(begin, page.find("</script>", begin) - begin);
  std::vector<std::string> lines;
  for (size_t from = 0, nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    lines.push_back(text.substr(from, nl - from));
  }
  return lines;
}

// The JSON inside <script type="application/json" id="ID">.
json Embedded(const std::string& page, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t from = page.find(open);
  if (from == std::string::npos) return nullptr;
  const size_t begin = from + open.size();
  return json::parse(page.substr(begin, page.find("</script>", begin) - begin));
}

std::string Unbase64(const std::string& in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    acc = acc << 6 | static_cast<uint32_t>(kAlphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string Inflate(const std::string& in) {
  std::string out(16 << 20, '\0');
  uLongf size = out.size();
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                 reinterpret_cast<const Bytef*>(in.data()), in.size()) != Z_OK) {
    return "(inflate failed)";
  }
  out.resize(size);
  return out;
}

TEST(ReportHtml, OneSelfContainedPage) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("startup_stall.jsonl"), &r);
  const std::string page = FormatHtml(r, "Hangs of a");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_EQ(Count(page, "<style>"), 1u);
  // Three script elements: the data, the hangs' details and the code, all inline.
  EXPECT_EQ(Count(page, "<script"), 3u);
  EXPECT_EQ(Count(page, "</script>"), 3u);
  for (const char* outside : {"http:", "https:", "src=", "<link", "<img", "<iframe", "url(",
                              "@import", "fetch(", "XMLHttpRequest", "import("}) {
    EXPECT_EQ(Count(page, outside), 0u) << outside;
  }
  // The browser enforces it too: nothing may be loaded.
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("<title>Hangs of a</title>"), std::string::npos);

  const json data = Embedded(page, "hw-data");
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["hangs"]["duration"], json::array({412}));
  EXPECT_EQ(data["hangs"]["class"], json::array({1}));  // blocked
  EXPECT_EQ(data["hangs"]["fatal"], json::array({1}));
  EXPECT_EQ(data["stalls"].size(), 1u);
  EXPECT_EQ(data["stalls"][0]["duration"], 3100);
  // The culprit is a frame of the table, with its file and line.
  const int culprit = data["hangs"]["culprit"][0];
  const json& frames = data["frames"];
  const json& strings = data["strings"];
  EXPECT_EQ(strings[frames[5 * culprit].get<int>()], "Load(int)");
  EXPECT_EQ(strings[frames[5 * culprit + 2].get<int>()], "a.cc");
  EXPECT_EQ(frames[5 * culprit + 3], 12);
}

// A frame of the app's module.
Frame AppFrame(const std::string& symbol, uint64_t offset) {
  Frame f;
  f.module = "/srv/app";
  f.offset = offset;
  f.addr = 0x550000000000 + offset;
  f.symbol = symbol;
  f.file = "app.cc";
  f.line = static_cast<int>(offset);
  return f;
}

CauseThread Thread(int64_t tid, const std::string& name, std::vector<std::string> symbols) {
  CauseThread t;
  t.tid = tid;
  t.name = name;
  for (size_t k = 0; k < symbols.size(); ++k) t.frames.push_back(AppFrame(symbols[k], 10 + k));
  return t;
}

// Names of the frames of stack `id` of the page's data.
std::vector<std::string> StackNames(const json& data, int id) {
  std::vector<std::string> names;
  for (const json& f : data["stacks"][id]) {
    names.push_back(data["strings"][data["frames"][5 * f.get<int>()].get<int>()]);
  }
  return names;
}

// A Python hang: its Python frames are frames of the table named as the culprit is
// ("Handler.handle_request (app.py:42)"), with their files and lines, the standard library's
// drawn as the runtime's; the stack's top (the culprit) is the application's Python function.
TEST(ReportHtml, PythonFramesAreNamedByFunctionFileAndLine) {
  Report r;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(report::Encode(hangwatch::testing::PythonHang()) + "\n", &r, &error))
      << error;
  const std::string page = FormatHtml(r, "py");
  const json data = Embedded(page, "hw-data");
  ASSERT_TRUE(data.is_object());
  const json& frames = data["frames"];
  const json& strings = data["strings"];
  const int culprit = data["hangs"]["culprit"][0];
  EXPECT_EQ(strings[frames[5 * culprit].get<int>()], "Handler.handle_request (app.py:42)");
  EXPECT_EQ(strings[frames[5 * culprit + 1].get<int>()], "") << "no module";
  EXPECT_EQ(strings[frames[5 * culprit + 2].get<int>()], "/srv/app.py");
  EXPECT_EQ(frames[5 * culprit + 3], 42);
  EXPECT_EQ(frames[5 * culprit + 4], 0) << "the application's";
  const int dominant = data["hangs"]["dominant"][0];
  const std::vector<std::string> names = StackNames(data, dominant);
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names[5], "BaseServer.serve_forever (socketserver.py:233)");
  EXPECT_EQ(data["stack_top"][dominant], 3);
  // The standard library's frame is the runtime's (kind 2).
  for (const json& f : data["stacks"][dominant]) {
    const int id = f.get<int>();
    if (strings[frames[5 * id].get<int>()] == names[5]) {
      EXPECT_EQ(frames[5 * id + 4], 2);
    }
  }
  EXPECT_EQ(page.find("0x7f3a1"), std::string::npos) << "no code object's address";
}

// The cause of each hang: kind and summary, the main thread's dominant stack and the stacks of
// the lock's owner, or of every thread of a deadlock, each with what it holds and does.
TEST(ReportHtml, EachHangCarriesItsCauseAndTheOtherSidesStacks) {
  Report r = Load("small_fatal.jsonl");
  r.hangs.push_back(r.hangs[0]);
  r.hangs.push_back(r.hangs[0]);
  HangRecord& lock = r.hangs[0];
  lock.cause.kind = CauseKind::kLock;
  lock.cause.summary = "waiting for mutex 0x10 held by thread 8 \"db-writer\", which is in fsync";
  lock.cause.lock = CauseLock{"mutex", 0x10};
  lock.cause.has_owner = true;
  lock.cause.owner = Thread(8, "db-writer", {"Journal::Flush", "Writer::Run"});
  lock.cause.owner.syscall = "fsync(fd 3)";
  lock.cause.owner.holds = CauseLock{"mutex", 0x10};
  lock.cause.chain = {lock.cause.owner};
  HangRecord& deadlock = r.hangs[1];
  deadlock.cause.kind = CauseKind::kDeadlock;
  deadlock.cause.cycle = {Thread(11, "locker-a", {"TakeBThenA"}),
                          Thread(12, "locker-b", {"TakeAThenB"})};
  deadlock.cause.cycle[0].wants = CauseLock{"mutex", 0x20};
  deadlock.cause.cycle[1].wants = CauseLock{"mutex", 0x30};
  deadlock.cause.summary = report::DescribeCause(deadlock.cause, 0);
  const json data = Embedded(FormatHtml(r, "t"), "hw-data");
  const json& h = data["hangs"];
  const json& strings = data["strings"];
  EXPECT_EQ(strings[h["cause_kind"][0].get<int>()], "lock");
  EXPECT_EQ(strings[h["cause"][0].get<int>()], lock.cause.summary);
  EXPECT_EQ(strings[h["cause_kind"][1].get<int>()], "deadlock");
  EXPECT_EQ(h["cause_kind"][2], 0);  // no cause
  EXPECT_EQ(h["cause"][2], 0);
  EXPECT_EQ(h["cause_threads"][2], json::array());
  // The main thread's dominant stack, to show beside the others.
  const std::vector<std::string> main = StackNames(data, h["dominant"][0]);
  ASSERT_FALSE(main.empty());
  EXPECT_EQ(main.front(), "read");
  EXPECT_NE(std::find(main.begin(), main.end(), "Load(int)"), main.end());
  const json& owner = h["cause_threads"][0];
  ASSERT_EQ(owner.size(), 5u);
  EXPECT_EQ(owner[0], 8);
  EXPECT_EQ(strings[owner[1].get<int>()], "db-writer");
  EXPECT_EQ(strings[owner[2].get<int>()], "holds mutex 0x10");
  EXPECT_EQ(strings[owner[3].get<int>()].get<std::string>().rfind("in fsync(fd 3)", 0), 0u);
  EXPECT_EQ(StackNames(data, owner[4]),
            (std::vector<std::string>{"Journal::Flush", "Writer::Run"}));
  const json& cycle = h["cause_threads"][1];
  ASSERT_EQ(cycle.size(), 10u);
  EXPECT_EQ(cycle[0], 11);
  EXPECT_EQ(cycle[5], 12);
  EXPECT_EQ(strings[cycle[2].get<int>()], "wants mutex 0x20");
  EXPECT_EQ(StackNames(data, cycle[9]), (std::vector<std::string>{"TakeAThenB"}));
}

// What each hang's pass served and whether a person waited: the context key (the Context
// column), the context and input in words (the details and hovers), perceived 1, 0 or -1
// (the Seen column's marker).
TEST(ReportHtml, EachHangCarriesItsContextAndWhetherAPersonWaited) {
  Report r = Load("small_fatal.jsonl");
  r.hangs.push_back(r.hangs[0]);
  r.hangs.push_back(r.hangs[0]);
  HangRecord& seen = r.hangs[0];
  seen.context.label_path = {"request", "thumbnail.decode"};
  seen.input.known = true;
  seen.input.events = 2;
  seen.perceived = true;
  r.hangs[1].context.has_trigger = true;
  r.hangs[1].context.trigger.kind = "timerfd";
  r.hangs[1].perceived = false;
  const std::string page = FormatHtml(r, "t");
  const json data = Embedded(page, "hw-data");
  const json& h = data["hangs"];
  const json& strings = data["strings"];
  EXPECT_EQ(strings[h["context"][0].get<int>()], "thumbnail.decode");
  EXPECT_EQ(strings[h["context_text"][0].get<int>()], "request > thumbnail.decode");
  EXPECT_EQ(strings[h["input"][0].get<int>()], "2 input events waited; perceived");
  EXPECT_EQ(strings[h["context"][1].get<int>()], "timerfd");
  EXPECT_EQ(h["perceived"], json::array({1, 0, -1}));
  EXPECT_EQ(strings[h["context"][2].get<int>()], "");
  EXPECT_EQ(strings[h["input"][2].get<int>()], "");
  EXPECT_NE(page.find("key: 'perceived', title: 'Seen'"), std::string::npos);
  EXPECT_NE(page.find("key: 'context', title: 'Context'"), std::string::npos);
}

TEST(ReportHtml, FramesAndStringsAreStoredOnce) {
  Report one = Load("small_fatal.jsonl");
  Report r;
  for (int i = 0; i < 200; ++i) {
    HangRecord h = one.hangs[0];
    h.hang_id = static_cast<uint64_t>(i);
    h.duration_ms = 300 + static_cast<uint64_t>(i);
    r.hangs.push_back(h);
  }
  const std::string page = FormatHtml(r, "t");
  // Once in the string table; the texts are compressed, and no string is repeated per hang.
  EXPECT_EQ(Count(page, "Load(int)"), 1u);
  EXPECT_EQ(Count(page, "/lib/libc.so.6"), 1u);
  const json data = Embedded(page, "hw-data");
  EXPECT_EQ(data["stacks"].size(), one.hangs[0].stacks.size());
  EXPECT_EQ(data["hangs"]["duration"].size(), 200u);
  const size_t chunk = data["detail_chunk"];
  EXPECT_EQ(Details(page).size(), (200 + chunk - 1) / chunk);
}

TEST(ReportHtml, NamesCannotEndTheScriptOrTheTitle) {
  Report r = Load("small_fatal.jsonl");
  r.hangs[0].stacks[0].frames[0].symbol = "</script><script>alert(1)</script><!--";
  r.hangs[0].process_name = "bad\xff\xfe utf-8";  // not UTF-8: repaired, not fatal
  const std::string page = FormatHtml(r, "<b>title</b>");
  EXPECT_EQ(Count(page, "alert(1)"), 1u);
  EXPECT_EQ(Count(page, "</script>"), 3u);
  EXPECT_EQ(Count(page, "<!--"), 0u);
  EXPECT_EQ(Count(page, "<b>"), 0u);
  EXPECT_NE(page.find("&lt;b&gt;title&lt;/b&gt;"), std::string::npos);
  const json data = Embedded(page, "hw-data");
  EXPECT_EQ(data["title"], "<b>title</b>");
  bool found = false;
  for (const auto& s : data["strings"]) found |= s == "</script><script>alert(1)</script><!--";
  EXPECT_TRUE(found) << data["strings"].dump();
}

// Each hang's timeline and text, compressed in chunks: the text is FormatText's.
TEST(ReportHtml, EachHangsDetailsInflateToItsTimelineAndTextReport) {
  Report r = Load("small_fatal.jsonl");
  MergeReport(Load("redis_culprit.jsonl"), &r);
  for (int i = 0; i < 70; ++i) r.hangs.push_back(r.hangs[static_cast<size_t>(i % 2)]);
  r.hangs[40].hang_id = 4040;
  const std::string page = FormatHtml(r, "t");
  const size_t chunk = Embedded(page, "hw-data")["detail_chunk"];
  const std::vector<std::string> details = Details(page);
  ASSERT_EQ(details.size(), (r.hangs.size() + chunk - 1) / chunk);
  std::vector<std::string> all;
  for (const auto& t : details) {
    const std::string joined = Inflate(Unbase64(t));
    size_t from = 0;
    for (size_t nul; (nul = joined.find('\0', from)) != std::string::npos; from = nul + 1) {
      all.push_back(joined.substr(from, nul - from));
    }
    all.push_back(joined.substr(from));
  }
  ASSERT_EQ(all.size(), r.hangs.size());
  for (size_t i = 0; i < r.hangs.size(); ++i) {
    const HangRecord& h = r.hangs[i];
    const size_t nl1 = all[i].find('\n'), nl2 = all[i].find('\n', nl1 + 1);
    ASSERT_NE(nl2, std::string::npos) << all[i];
    // [t_ms, position of the stack in the hang's stacks, cpu_us] per sample; one state letter.
    json expected = json::array();
    std::string states;
    for (const TimelineEntry& e : h.timeline) {
      expected.push_back(e.t_ms);
      expected.push_back(e.stack);  // these records' stack ids are their positions
      expected.push_back(e.cpu_us);
      states.push_back(e.state);
    }
    EXPECT_EQ(json::parse(all[i].substr(0, nl1)), expected) << i;
    EXPECT_EQ(all[i].substr(nl1 + 1, nl2 - nl1 - 1), states) << i;
    Report one;
    one.hangs.push_back(h);
    EXPECT_EQ(all[i].substr(nl2 + 1), FormatText(one)) << i;
  }
  EXPECT_NE(all[40].find("Hang:             #4040"), std::string::npos) << all[40];
}

TEST(ReportHtml, CulpritSourceLinesAreEmbeddedWhenReadable) {
  TempDir dir;
  std::string source;
  for (int i = 1; i <= 20; ++i) source += "line " + std::to_string(i) + "\n";
  WriteFile(dir / "work.cc", source);
  Report r = Load("small_fatal.jsonl");
  HangRecord other = r.hangs[0];
  // The file has no culprit: the page finds it in the dominant stack, as the text report.
  const int frame = HangCulprit(r.hangs[0]).frame;
  Stack& dominant = r.hangs[0].stacks[static_cast<size_t>(r.hangs[0].dominant_stack)];
  ASSERT_LT(static_cast<size_t>(frame), dominant.frames.size());
  dominant.frames[static_cast<size_t>(frame)].file = dir / "work.cc";
  dominant.frames[static_cast<size_t>(frame)].line = 10;
  r.hangs.push_back(other);  // a.cc:12, which cannot be read here
  // Not named by the DWARF of a module (symbolization fills the list): not read.
  EXPECT_EQ(Embedded(FormatHtml(r, "t"), "hw-data")["sources"], json::array());
  r.dwarf_source_files.insert(dir / "work.cc");
  // Named, but readable only with privileges (root, the owner here, reads anything): not read.
  ASSERT_EQ(chmod((dir / "work.cc").c_str(), 0600), 0);
  if (getuid() == 0) {
    EXPECT_EQ(Embedded(FormatHtml(r, "t"), "hw-data")["sources"], json::array());
  }
  ASSERT_EQ(chmod((dir / "work.cc").c_str(), 0644), 0);
  const json data = Embedded(FormatHtml(r, "t"), "hw-data");
  ASSERT_EQ(data["sources"].size(), 1u) << data["sources"].dump();
  const json& s = data["sources"][0];
  EXPECT_EQ(s[0], data["hangs"]["culprit"][0]);
  EXPECT_EQ(s[1], 7);
  EXPECT_EQ(s[2], json::array(
                      {"line 7", "line 8", "line 9", "line 10", "line 11", "line 12", "line 13"}));
}

// Lag records: merged over all, per process and host, and as one bar per power of two.
TEST(ReportHtml, LagRecordsAreSummarized) {
  Report r = Load("small_fatal.jsonl");
  EXPECT_TRUE(Embedded(FormatHtml(r, "t"), "hw-data")["lag"].is_null());
  PassHistogram all;
  for (int i = 0; i < 3; ++i) {
    Lag l;
    l.process_name = i == 2 ? "other" : "demo";
    l.host = "web-1";
    for (int k = 0; k < 100; ++k) l.passes.Add(1'000'000);     // 1 ms
    l.passes.Add(static_cast<uint64_t>(i + 1) * 300'000'000);  // 300, 600, 900 ms
    all.Merge(l.passes);
    r.lags.push_back(l);
  }
  const json lag = Embedded(FormatHtml(r, "t"), "hw-data")["lag"];
  ASSERT_TRUE(lag.is_object());
  const LagFigures f = all.Figures();
  EXPECT_EQ(lag["passes"], 303);
  EXPECT_EQ(lag["records"], 3);
  EXPECT_DOUBLE_EQ(lag["p50"].get<double>(), f.p50_ms);
  EXPECT_DOUBLE_EQ(lag["p99"].get<double>(), f.p99_ms);
  EXPECT_DOUBLE_EQ(lag["max"].get<double>(), f.max_ms);
  EXPECT_EQ(lag["slow"], json::array({{16, 3}, {33, 3}, {50, 3}, {100, 3}, {250, 3}, {500, 2}}));
  // Bars from the octave of 1 ms (up to 1.048576 ms) to that of 900 ms (up to 1073.741824 ms).
  uint64_t total = 0;
  for (const auto& b : lag["bars"]) total += b[1].get<uint64_t>();
  EXPECT_EQ(total, 303u);
  EXPECT_DOUBLE_EQ(lag["bars"].front()[0].get<double>(), 1.048576);
  EXPECT_DOUBLE_EQ(lag["bars"].back()[0].get<double>(), 1073.741824);
  ASSERT_EQ(lag["by"].size(), 2u);
  EXPECT_EQ(lag["by"][0]["process"], "demo");  // by p99, worst first (equal: by name)
  EXPECT_EQ(lag["by"][0]["passes"], 202);
  EXPECT_EQ(lag["by"][1]["process"], "other");
  EXPECT_TRUE(lag["hang_rate"].is_null()) << "the records cover no time";
}

// The summary's hang rate: the hangs of the processes with lag records per hour they cover.
TEST(ReportHtml, HangRateIsInTheSummary) {
  Report r = Load("small_fatal.jsonl");  // pid 1, 412 ms
  ASSERT_EQ(r.hangs.size(), 1u);
  Lag l;
  l.pid = r.hangs[0].pid;
  l.host = r.hangs[0].host;
  l.start_unix_ms = 1'000'000;
  l.end_unix_ms = l.start_unix_ms + 360'000;  // 6 minutes
  l.passes.Add(1'000'000);
  r.lags.push_back(l);
  const std::string page = FormatHtml(r, "t");
  const json lag = Embedded(page, "hw-data")["lag"];
  EXPECT_DOUBLE_EQ(lag["hang_rate"].get<double>(), 3600.0 * 0.412 / 360.0);
  EXPECT_DOUBLE_EQ(lag["hang_s"].get<double>(), 0.412);
  EXPECT_DOUBLE_EQ(lag["watched_s"].get<double>(), 360.0);
  EXPECT_NE(page.find("stat-hang-rate"), std::string::npos) << "the page's script shows it";
}

TEST(ReportHtml, NoHangsIsStillAPage) {
  Report r;
  const std::string page = FormatHtml(r, "empty");
  const json data = Embedded(page, "hw-data");
  EXPECT_EQ(data["hangs"]["duration"].size(), 0u);
  EXPECT_EQ(Details(page).size(), 0u);
}

// The command line, on a report of a real program and on a synthetic one of 1000 hangs.
class ReportHtmlCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    env_ = {"HANGWATCH_CACHE_DIR=" + *dir_ / "cache"};
    const auto r = RunCommand({STALL_PROGRAM, "--agent", *dir_ / "real.jsonl", "0", "400"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static hangwatch::testing::CommandResult Report(std::vector<std::string> args) {
    args.insert(args.begin(), {HANGWATCH_CLI, "report"});
    return RunCommand(args, env_);
  }
  static TempDir* dir_;
  static std::vector<std::string> env_;
};
TempDir* ReportHtmlCommand::dir_ = nullptr;
std::vector<std::string> ReportHtmlCommand::env_;

TEST_F(ReportHtmlCommand, WritesThePageToAFileOrToStdout) {
  const auto file = Report({*dir_ / "real.jsonl", "--format", "html", "-o", *dir_ / "r.html"});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, "");
  const auto out = Report({*dir_ / "real.jsonl", "--format=html"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, ReadFile(*dir_ / "r.html"));

  // Symbolized offline: the culprit's line of stall_program.cc is in the page, as in the file.
  const json data = Embedded(out.out, "hw-data");
  const int culprit = data["hangs"]["culprit"][0];
  const json& strings = data["strings"];
  EXPECT_EQ(strings[data["frames"][5 * culprit].get<int>()], "StallTheMainThread");
  const std::string file_name = strings[data["frames"][5 * culprit + 2].get<int>()];
  const int line = data["frames"][5 * culprit + 3];
  ASSERT_NE(file_name.find("stall_program.cc"), std::string::npos) << file_name;
  ASSERT_EQ(data["sources"].size(), 1u);
  const json& s = data["sources"][0];
  const std::string source = ReadFile(file_name);
  size_t at = 0;
  for (int i = 1; i < line; ++i) at = source.find('\n', at) + 1;
  const std::string expected = source.substr(at, source.find('\n', at) - at);
  EXPECT_EQ(s[2][line - s[1].get<int>()], expected);

  const auto help = Report({"--help"});
  EXPECT_NE(help.out.find("  html    one self-contained interactive page"), std::string::npos);
}

// A hostile report names files as its culprits' sources: a secret of the user's, /etc/shadow
// (the report is made as root), /dev/zero (it used to be read until memory ran out). The page
// reads source only from files that the DWARF of a module of the report names: the real hang's
// stall_program.cc line is there, nothing of the others; --no-source leaves out every source.
TEST_F(ReportHtmlCommand, SourceIsReadOnlyFromFilesTheDwarfOfAModuleNames) {
  TempDir dir;
  WriteFile(dir / "secret.cc", "SECRET_LINE_4242\nSECRET_LINE_4243\n");
  tools::Report real;
  std::string error;
  ASSERT_TRUE(ReadReportFile(*dir_ / "real.jsonl", &real, &error)) << error;
  ASSERT_EQ(real.hangs.size(), 1u);
  std::string text = ReadFile(*dir_ / "real.jsonl");
  for (const std::string& file :
       {dir / "secret.cc", std::string("/etc/shadow"), std::string("/dev/zero")}) {
    HangRecord h = real.hangs[0];
    for (Stack& s : h.stacks) {
      for (Frame& f : s.frames) {
        f.module = "/nonexistent/app";  // nothing to symbolize: the recorded file stays
        f.file = file;
        f.line = 1;
      }
    }
    h.culprit.module = "/nonexistent/app";
    h.culprit.file = file;
    h.culprit.line = 1;
    h.signature = "";
    text += report::Encode(h) + "\n";
  }
  WriteFile(dir / "hostile.jsonl", text);
  // Bounded, so that reading /dev/zero ends as a failure, not a machine out of memory. (Not the
  // address space under the sanitizers: their shadow memory alone is terabytes of it.)
  auto page = [&](const std::vector<std::string>& more) {
#if defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
    std::vector<std::string> argv = {"/usr/bin/timeout",    "120",      HANGWATCH_CLI, "report",
                                     dir / "hostile.jsonl", "--format", "html",        "-o",
                                     dir / "page.html"};
#else
    std::vector<std::string> argv = {
        "/usr/bin/prlimit", "--as=2000000000",     "/usr/bin/timeout", "120",  HANGWATCH_CLI,
        "report",           dir / "hostile.jsonl", "--format",         "html", "-o",
        dir / "page.html"};
#endif
    argv.insert(argv.end(), more.begin(), more.end());
    return RunCommand(argv, env_);
  };
  const auto r = page({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(dir / "page.html");
  EXPECT_EQ(html.find("SECRET_LINE"), std::string::npos);
  const std::string shadow = ReadFile("/etc/shadow");
  const std::string first_entry = shadow.substr(0, shadow.find(':') + 1);  // "root:"
  ASSERT_FALSE(first_entry.empty());
  const json data = Embedded(html, "hw-data");
  for (const json& s : data["sources"]) {
    for (const json& line : s[2]) {
      EXPECT_NE(line.get<std::string>().rfind(first_entry, 0), 0u) << line;
    }
  }
  ASSERT_EQ(data["sources"].size(), 1u) << data["sources"].dump();  // stall_program.cc only
  EXPECT_EQ(data["sources"][0][0], data["hangs"]["culprit"][0]);

  ASSERT_EQ(page({"--no-source"}).exit_code, 0);
  EXPECT_EQ(Embedded(ReadFile(dir / "page.html"), "hw-data")["sources"], json::array());
  const auto help = RunCommand({HANGWATCH_CLI, "report", "--help"});
  EXPECT_NE(help.out.find("  --no-source "), std::string::npos) << help.out;
}

TEST_F(ReportHtmlCommand, BadOutputIsOneLineAndExitTwo) {
  const auto r = Report({*dir_ / "real.jsonl", "--format", "html", "-o", "/nonexistent/x.html"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/x.html: cannot write"), std::string::npos) << r.err;
  const auto f = Report({*dir_ / "real.jsonl", "--format", "htm"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_EQ(
      f.err,
      "hangwatch report: unknown format 'htm' (text, json, folded, svg, trace, pprof, html)\n");
}

TEST_F(ReportHtmlCommand, PageIsAtMostOneAndAHalfTimesTheJsonLines) {
  const std::string jsonl = *dir_ / "synthetic.jsonl", html = *dir_ / "synthetic.html";
  const auto gen = RunCommand({HTML_FIXTURE, "1000", "7"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  WriteFile(jsonl, gen.out);
  ASSERT_EQ(CountLines(gen.out), 1000u + 20u);  // and 20 lag records
  const auto r = Report({jsonl, "--no-symbolize", "--format", "html", "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double in = static_cast<double>(gen.out.size());
  const double out = static_cast<double>(ReadFile(html).size());
  std::printf("1000 hangs: JSON Lines %.0f bytes, HTML %.0f bytes (%.2fx)\n", in, out, out / in);
  EXPECT_LE(out, 1.5 * in);
  // And the page of the real program's single hang, code included: small in absolute terms.
  const double real_in = static_cast<double>(ReadFile(*dir_ / "real.jsonl").size());
  const auto one = Report({*dir_ / "real.jsonl", "--format", "html"});
  std::printf("1 hang: JSON Lines %.0f bytes, HTML %zu bytes\n", real_in, one.out.size());
}

// Hangs and lag of several watched threads (issue 39): each hang carries its thread role and
// name (the page's Thread column, filter and groups), the main thread's lag is "lag" alone and
// each other role's is in "lag_roles", never added together; the page's script groups by role
// and signature.
TEST(ReportHtml, ThreadsAreShownAndTheirLagIsNeverSummed) {
  Report r;
  std::string error;
  ASSERT_TRUE(ParseJsonLines(
      testing::ThreadHangLine("main", "1111111111111111", "Parse", 200) +
          testing::ThreadHangLine("render", "1111111111111111", "Parse", 60) +
          testing::ThreadLagLine("main", 1000, 1.0) + testing::ThreadLagLine("render", 100, 30.0),
      &r, &error))
      << error;
  const std::string page = FormatHtml(r, "threads");
  const json data = Embedded(page, "hw-data");
  const json& strings = data["strings"];
  ASSERT_EQ(data["hangs"]["thread"].size(), 2u);
  EXPECT_EQ(strings[data["hangs"]["thread"][0].get<int>()], "main");
  EXPECT_EQ(strings[data["hangs"]["thread"][1].get<int>()], "render");
  EXPECT_EQ(strings[data["hangs"]["thread_name"][1].get<int>()], "RenderThread");
  EXPECT_EQ(data["lag"]["passes"], 1000);
  EXPECT_NEAR(data["lag"]["hang_rate"].get<double>(), 12.0, 0.01);
  ASSERT_EQ(data["lag_roles"].size(), 1u);
  EXPECT_EQ(data["lag_roles"][0]["role"], "render");
  EXPECT_EQ(data["lag_roles"][0]["passes"], 100);
  EXPECT_NEAR(data["lag_roles"][0]["hang_rate"].get<double>(), 3.6, 0.01);
  // The script: a Thread column, groups keyed by role and signature.
  EXPECT_NE(page.find("title: 'Thread'"), std::string::npos);
  EXPECT_NE(page.find("this.thread(i) + '\\n' + (this.signature(i)"), std::string::npos);
}

// The per-frame counts of the dominant stack (the text and HTML reports' first column): two
// stacks' Java frames (the JVM's thread dump's: no address) are the same frame when they name
// the same method at the same line, never merely because both have address 0.
TEST(ReportFrames, JavaFramesAreTheSameFrameByTheirNameAndLine) {
  auto java = [](const std::string& method, int line) {
    Frame f;
    f.language = FrameLanguage::kJava;
    f.symbol = method;
    f.file = "Server.java";
    f.line = line;
    return f;
  };
  HangRecord h;
  Stack a;
  a.count = 3;
  a.frames = {java("Server.nap", 23), java("Server.handle", 34), java("java.lang.Thread.run", 840)};
  Stack b;
  b.count = 2;
  b.frames = {java("Server.other", 40), java("Server.route", 50),
              java("java.lang.Thread.run", 840)};
  h.stacks = {a, b};
  h.dominant_stack = 0;
  EXPECT_EQ(DominantPathCounts(h), (std::vector<uint32_t>{3, 3, 5}));
}

}  // namespace
}  // namespace hangwatch::tools
