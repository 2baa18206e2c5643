// `hangwatch top`'s line parser, reader and grouping on hand-made lines: every kind of bad line,
// slices and threads that must not change a single figure, filters, percentiles, examples.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "python_hang.h"
#include "report/report_record.h"
#include "tools/top/top_group.h"
#include "tools/top/top_output.h"
#include "tools/top/top_scan.h"

namespace hangwatch::tools {
namespace {

struct H {
  std::string host = "web-1";
  int pid = 100;
  int hang_id = 0;
  int64_t start = 1763700000000;
  int duration = 300;
  std::string cls = "busy";
  std::string signature = "aaaaaaaaaaaaaaaa";
  std::string fingerprint = "ffffffffffffffff";
  std::string culprit = "Work()";
  std::string labels = R"({"build":"17"})";
  std::string cause;    // the cause object's JSON; "" leaves the field out (an older agent)
  std::string context;  // the members after "monitor_pause_us" (",\"context\":{...}"); ""
};

// A hang line like the agent's, with stacks and timeline for the parser to skip.
std::string Line(const H& h) {
  return R"({"type":"hang","format_version":1,"pid":)" + std::to_string(h.pid) +
         R"(,"tid":1,"process":"/usr/bin/demo","process_name":"demo","host":")" + h.host +
         R"(","labels":)" + h.labels + R"(,"hang_id":)" + std::to_string(h.hang_id) +
         R"(,"start_unix_ms":)" + std::to_string(h.start) + R"(,"duration_ms":)" +
         std::to_string(h.duration) + R"(,"cpu_ms":10,"cpu_percent":3,"class":")" + h.cls +
         R"(","stopped_ms":0,"threshold_ms":100,"sample_interval_ms":10,"samples":2,)"
         R"("failed_samples":0,"dropped_stacks":0,"fatal":false,"fingerprint":")" +
         h.fingerprint + R"(","signature":")" + h.signature + R"(","culprit":{"symbol":")" +
         h.culprit +
         R"(","module":"/usr/bin/demo","offset":"0x1234","file":"demo.cc","line":42,"frame":0},)" +
         (h.cause.empty() ? std::string() : R"("cause":)" + h.cause + ",") +
         R"("dominant_stack":0,"stacks":[{"id":0,"count":2,"first_seen_ms":1,"last_seen_ms":2,)"
         R"("cpu_ms":1,"frames":[{"addr":"0x1234","module":"/usr/bin/demo","build_id":"ab",)"
         R"("offset":"0x1234","symbol":"Work","method":"pc"}]}],"timeline":[{"t_ms":1,)"
         R"("stack":0,"cpu_us":5,"state":"R"}],"timeline_truncated":false,"modules":[],)"
         R"("monitor_pause_us":0)" +
         h.context + "}";
}

// Parses one line with the padding the parser wants. The views of *out stay valid until the next
// call (they point into the parser's buffers and the line's copy).
LineKind Kind(const std::string& line, TopHang* out = nullptr) {
  static TopLineParser parser(true);
  static std::string padded;
  TopHang h;
  padded = line + std::string(TopLineParser::kPadding, ' ');
  const LineKind k = parser.Parse(std::string_view(padded.data(), line.size()), &h);
  if (out != nullptr) *out = h;
  return k;
}

TEST(TopLineParser, ReadsTheTopLevelFields) {
  H h;
  h.host = "web-\\\"7";  // an escaped quote inside a string
  TopHang t;
  ASSERT_EQ(Kind(Line(h), &t), LineKind::kHang);
  EXPECT_EQ(t.pid, 100);
  EXPECT_EQ(t.host, "web-\"7");
  EXPECT_EQ(t.process_name, "demo");
  EXPECT_EQ(t.duration_ms, 300u);
  EXPECT_EQ(t.cpu_ms, 10u);
  EXPECT_EQ(t.hang_class, 1);
  EXPECT_EQ(t.signature, "aaaaaaaaaaaaaaaa");
  ASSERT_TRUE(t.has_culprit);
  EXPECT_EQ(t.culprit_symbol, "Work()");
  EXPECT_EQ(t.culprit_file, "demo.cc");
  EXPECT_EQ(t.culprit_line, 42);
  EXPECT_EQ(t.culprit_offset, 0x1234u);
  ASSERT_EQ(t.labels.size(), 1u);
  EXPECT_EQ(t.labels[0].first, "build");
  EXPECT_EQ(t.labels[0].second, "17");
}

TEST(TopLineParser, SortsBadLinesFromOthers) {
  const std::string good = Line(H{});
  // Torn writes: every prefix of a hang line is bad, never a hang.
  for (size_t n = 1; n < good.size(); n += 7) {
    EXPECT_EQ(Kind(good.substr(0, n)), LineKind::kBad) << good.substr(0, n);
  }
  EXPECT_EQ(Kind(good + good), LineKind::kBad) << "two records glued together";
  EXPECT_EQ(Kind(good + "}"), LineKind::kBad);
  EXPECT_EQ(Kind("not json"), LineKind::kBad);
  EXPECT_EQ(Kind("[1,2]"), LineKind::kBad);
  EXPECT_EQ(Kind(R"({"type":"hang","format_version":1,"pid":"x"})"), LineKind::kBad);
  EXPECT_EQ(Kind(R"({"type":"hang","format_version":1,"pid":1})"), LineKind::kBad)
      << "missing fields";
  std::string mistyped = good;
  mistyped.replace(mistyped.find("\"duration_ms\":300"), 17, "\"duration_ms\":\"300\"");
  EXPECT_EQ(Kind(mistyped), LineKind::kBad);
  EXPECT_EQ(Kind(R"({"type":"fancy_new","format_version":1,"pid":"x","hang_id":[1]})"),
            LineKind::kUnknownType);
  std::string v3 = good;
  v3.replace(v3.find("\"format_version\":1"), 18, "\"format_version\":3");
  EXPECT_EQ(Kind(v3), LineKind::kOtherVersion);
  EXPECT_EQ(Kind(R"({"type":"lag","format_version":1,"pid":7,"start_unix_ms":1,)"
                 R"("end_unix_ms":2,"busy_ms":0.5,"buckets":[],"passes":3})"),
            LineKind::kOtherRecord);
  EXPECT_EQ(Kind("  \r"), LineKind::kEmpty);
  // Fields in another order, the culprit null, no host or signature (older agents).
  EXPECT_EQ(Kind(R"({"duration_ms":5,"class":"mixed","culprit":null,"start_unix_ms":1,"tid":3,)"
                 R"("hang_id":0,"pid":3,"format_version":1,"type":"hang","process":"/a/b",)"
                 R"("cpu_ms":0,"samples":1,"stacks":[]})"),
            LineKind::kHang);
  TopHang t;
  Kind(R"({"type":"hang","format_version":1,"pid":3,"tid":3,"hang_id":0,"start_unix_ms":1,)"
       R"("duration_ms":5,"cpu_ms":0,"samples":1,"class":"mixed","culprit":null,"stacks":[],)"
       R"("process":"/a/b"})",
       &t);
  EXPECT_FALSE(t.has_culprit);
  EXPECT_EQ(t.process_name, "b");
  EXPECT_EQ(t.hang_class, 3);
  // The executable's file name as every reader names it (report::ProcessName, as `hangwatch
  // report` does): a backslash ends a directory too.
  Kind(R"({"type":"hang","format_version":1,"pid":3,"tid":3,"hang_id":0,"start_unix_ms":1,)"
       R"("duration_ms":5,"cpu_ms":0,"samples":1,"stacks":[],"process":"/opt/app\\tool.exe"})",
       &t);
  EXPECT_EQ(t.process_name, "tool.exe");
}

// Reads `text` the way the scanner does (not padded: the end is copied).
std::vector<TopGroup> Group(const std::string& text, const TopQuery& q, ScanStats* stats,
                            TopSort sort = TopSort::kCount) {
  TopLineParser parser(!q.labels.empty());
  TopAggregator agg(q);
  ScanTopText(text, 0, 0, &parser, &agg, stats);
  return agg.Groups(sort);
}

TEST(TopAggregator, OneGroupPerSignatureWithItsFigures) {
  std::string text;
  // Signature A: 10 hangs on 2 hosts, 3 processes, durations 100..1000.
  for (int i = 1; i <= 10; ++i) {
    H h;
    h.host = i % 2 ? "web-1" : "web-2";
    h.pid = 100 + i % 3;
    h.hang_id = i;
    h.duration = 100 * i;
    h.start = 1763700000000 + i;
    h.cls = i <= 7 ? "busy" : "blocked";
    text += Line(h) + "\n";
  }
  // Signature B: 2 long hangs.
  for (int i = 0; i < 2; ++i) {
    H h;
    h.signature = "bbbbbbbbbbbbbbbb";
    h.culprit = "Wait()";
    h.duration = 5000;
    h.cls = "blocked";
    text += Line(h) + "\n";
  }
  text += "torn {\"type\":\"hang\"\n";
  text += R"({"type":"hang","format_version":3})"
          "\n";
  text += R"({"type":"other","format_version":1})";  // no newline at the end
  ScanStats stats;
  const auto groups = Group(text, TopQuery{}, &stats);
  EXPECT_EQ(stats.hangs, 12u);
  EXPECT_EQ(stats.bad_lines, 1u);
  EXPECT_EQ(stats.other_versions, 1u);
  EXPECT_EQ(stats.unknown_types, 1u);
  EXPECT_EQ(stats.lines, 15u);
  ASSERT_EQ(groups.size(), 2u);
  const TopGroup& a = groups[0];
  EXPECT_EQ(a.key, "aaaaaaaaaaaaaaaa");
  EXPECT_EQ(a.count, 10u);
  EXPECT_EQ(a.hosts, 2u);
  // (host, pid): web-1 has i = 1,3,5,7,9 -> pids 101,100,102,101,100; web-2: 2,4,6,8,10 ->
  // 102,101,100,102,101: 3 + 3.
  EXPECT_EQ(a.processes, 6u);
  EXPECT_EQ(a.p50_ms, 500u);
  EXPECT_EQ(a.p95_ms, 1000u);
  EXPECT_EQ(a.max_ms, 1000u);
  EXPECT_EQ(a.total_ms, 5500u);
  EXPECT_EQ(a.busy, 7u);
  EXPECT_EQ(a.blocked, 3u);
  EXPECT_EQ(a.first_unix_ms, 1763700000001);
  EXPECT_EQ(a.last_unix_ms, 1763700000010);
  ASSERT_TRUE(a.culprit);
  EXPECT_EQ(a.culprit->symbol, "Work()");
  EXPECT_EQ(a.culprit->line, 42);
  ASSERT_EQ(a.examples.size(), kTopExamples);
  EXPECT_EQ(a.examples[0].duration_ms, 1000u);
  EXPECT_EQ(a.examples[0].hang_id, 10u);
  EXPECT_EQ(a.examples[1].duration_ms, 900u);
  ASSERT_EQ(a.process_names.size(), 1u);
  EXPECT_EQ(a.process_names[0].first, "demo");
  EXPECT_EQ(groups[1].count, 2u);

  // By total duration, B (10 s) comes before A (5.5 s).
  const auto by_total = Group(text, TopQuery{}, &stats, TopSort::kTotal);
  EXPECT_EQ(by_total[0].key, "bbbbbbbbbbbbbbbb");

  TopQuery by_culprit;
  by_culprit.by = TopBy::kCulprit;
  const auto culprits = Group(text, by_culprit, &stats);
  ASSERT_EQ(culprits.size(), 2u);
  EXPECT_EQ(culprits[0].key, "Work() in demo");
  EXPECT_EQ(culprits[1].key, "Wait() in demo");

  TopQuery by_fingerprint;
  by_fingerprint.by = TopBy::kFingerprint;
  EXPECT_EQ(Group(text, by_fingerprint, &stats).size(), 1u);
}

TEST(TopAggregator, Filters) {
  std::string text;
  for (int i = 0; i < 6; ++i) {
    H h;
    h.start = 1000 + i;
    h.labels = i % 2 ? R"({"build":"17","region":"eu"})" : R"({"build":"18"})";
    text += Line(h) + "\n";
  }
  ScanStats stats;
  TopQuery q;
  q.labels = {{"build", "17"}};
  EXPECT_EQ(Group(text, q, &stats).at(0).count, 3u);
  q.labels = {{"build", "17"}, {"region", "eu"}};
  EXPECT_EQ(Group(text, q, &stats).at(0).count, 3u);
  q.labels = {{"build", "17"}, {"region", "us"}};
  EXPECT_TRUE(Group(text, q, &stats).empty());
  q.labels.clear();
  q.since_ms = 1002;
  q.until_ms = 1005;
  const auto g = Group(text, q, &stats);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].count, 3u);
  EXPECT_EQ(g[0].first_unix_ms, 1002);
  EXPECT_EQ(g[0].last_unix_ms, 1004);
}

// Slices, chunk sizes and threads change nothing: the same JSON as one thread reading one piece.
TEST(ScanTopFiles, SlicesAndThreadsGiveTheSameGroups) {
  hangwatch::testing::TempDir dir;
  std::string text;
  size_t expected = 0;
  for (int i = 0; i < 500; ++i) {
    H h;
    h.host = "web-" + std::to_string(i % 17);
    h.pid = 1000 + i % 23;
    h.hang_id = i;
    h.duration = 100 + (i * 37) % 900;
    h.start = 1763700000000 + i * 1000;
    h.signature = std::string(16, static_cast<char>('a' + i % 5));
    h.cls = i % 3 ? "busy" : "blocked";
    text += Line(h) + "\n";
    ++expected;
    if (i % 50 == 7) text += Line(h).substr(0, 200) + "\n";  // a torn line
    if (i % 70 == 3) text += "\n";
  }
  hangwatch::testing::WriteFile(dir / "a.jsonl", text);
  hangwatch::testing::WriteFile(dir / "b.jsonl", text.substr(0, text.size() - 1));  // no final \n
  const std::vector<std::string> files = {dir / "a.jsonl", dir / "b.jsonl"};

  auto run = [&](int threads, size_t slice, size_t read) {
    TopScanOptions o;
    o.threads = threads;
    o.slice_bytes = slice;
    o.read_bytes = read;
    TopQuery q;
    std::vector<std::unique_ptr<TopSink>> sinks;
    const auto stats = ScanTopFiles(
        files, o, [&] { return std::make_unique<TopAggregator>(q); }, &sinks);
    TopAggregator all(q);
    for (auto& s : sinks) all.Merge(std::move(static_cast<TopAggregator&>(*s)));
    EXPECT_EQ(stats.size(), 2u);
    for (const auto& s : stats) {
      EXPECT_EQ(s.hangs, expected) << threads << " " << slice << " " << read;
      EXPECT_EQ(s.bad_lines, 10u) << threads << " " << slice << " " << read;
      EXPECT_EQ(s.error, "");
    }
    return FormatTopJson(all.Groups(TopSort::kCount), q.by, 0);
  };
  const std::string one = run(1, size_t{1} << 30, size_t{1} << 24);
  EXPECT_EQ(nlohmann::json::parse(one).size(), 5u);
  // Slices smaller than a line, and a read buffer smaller than a line (it grows).
  for (const auto& [threads, slice, read] : std::vector<std::tuple<int, size_t, size_t>>{
           {2, 1000, 4096}, {2, 97, 512}, {3, 7777, 100}, {2, 65536, 1 << 16}, {1, 333, 2000}}) {
    EXPECT_EQ(run(threads, slice, read), one) << threads << " " << slice << " " << read;
  }
}

// A lag record of `host` (pid 100) covering `minutes` from `start`, with `build`.
std::string LagLine(const std::string& host, const std::string& build, int64_t start, int minutes) {
  std::string line = R"({"type":"lag","format_version":1,"pid":100,"process_name":"demo","host":")";
  line += host;
  line += R"(","labels":{"build":")";
  line += build;
  line += R"("},"start_unix_ms":)";
  line += std::to_string(start);
  line += R"(,"end_unix_ms":)";
  line += std::to_string(start + minutes * 60'000);
  line += R"(,"passes":1,"busy_ms":1.000,"buckets":[[1007.616,1]]})";
  return line;
}

// Hang rate (seconds of hang per watched hour) per group, by label (compare builds) and overall,
// and the hosts and processes each group touched out of all those read, whatever the threads
// and slices.
TEST(ScanTopFiles, HangRatePerGroupAndHostsTouchedOfAll) {
  hangwatch::testing::TempDir dir;
  std::string text;
  // Build 17: four hosts watched 30 minutes each (2 h), three hangs of 2 s on web-1: 3 s/h.
  for (int i = 1; i <= 4; ++i)
    text += LagLine("web-" + std::to_string(i), "17", 1763700000000, 30) + "\n";
  for (int i = 0; i < 3; ++i) {
    H h;
    h.host = "web-1";
    h.duration = 2000;
    h.hang_id = i;
    text += Line(h) + "\n";
  }
  // Build 18: one host watched an hour, two hangs of 1.8 s: 3.6 s/h.
  text += LagLine("web-5", "18", 1763700000000, 60) + "\n";
  for (int i = 0; i < 2; ++i) {
    H h;
    h.host = "web-5";
    h.duration = 1800;
    h.hang_id = i;
    h.labels = R"({"build":"18"})";
    text += Line(h) + "\n";
  }
  hangwatch::testing::WriteFile(dir / "a.jsonl", text);
  auto run = [&](TopQuery q, int threads, size_t slice) {
    TopScanOptions o;
    o.threads = threads;
    o.slice_bytes = slice;
    o.want_labels = true;
    std::vector<std::unique_ptr<TopSink>> sinks;
    ScanTopFiles(
        {dir / "a.jsonl"}, o, [&] { return std::make_unique<TopAggregator>(q); }, &sinks);
    auto all = std::make_unique<TopAggregator>(q);
    for (auto& s : sinks) all->Merge(std::move(static_cast<TopAggregator&>(*s)));
    return all;
  };
  TopQuery by_build;
  by_build.by = TopBy::kLabel;
  by_build.by_label = "build";
  for (const auto& [threads, slice] :
       std::vector<std::pair<int, size_t>>{{1, 1u << 30}, {3, 300}}) {
    const auto all = run(by_build, threads, slice);
    EXPECT_EQ(all->hosts_total(), 5u);
    EXPECT_EQ(all->processes_total(), 5u);
    EXPECT_EQ(all->watched_ms(), 3u * 3'600'000u);
    const auto groups = all->Groups(TopSort::kCount);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].key, "17");
    EXPECT_EQ(groups[0].hosts, 1u);
    ASSERT_TRUE(groups[0].hang_seconds_per_hour.has_value());
    EXPECT_DOUBLE_EQ(*groups[0].hang_seconds_per_hour, 3.0);
    EXPECT_EQ(groups[1].key, "18");
    EXPECT_DOUBLE_EQ(*groups[1].hang_seconds_per_hour, 3.6);
    TopTextOptions o;
    o.by = by_build.by;
    o.by_label = "build";
    o.hosts_total = all->hosts_total();
    o.processes_total = all->processes_total();
    o.watched_ms = all->watched_ms();
    o.hangs = all->hangs();
    o.files = 1;
    const std::string table = FormatTopText(groups, o);
    EXPECT_NE(table.find("5 hangs in 2 groups (by label:build) from 1 file\n5 hosts, 5 processes, "
                         "3h00m watched"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("      3       1/5         1/5 "), std::string::npos) << table;
    const auto json = nlohmann::json::parse(FormatTopJson(groups, o.by, 0, "build"));
    EXPECT_EQ(json[0]["by"], "label:build");
    EXPECT_DOUBLE_EQ(json[1]["hang_seconds_per_hour"].get<double>(), 3.6);
  }
  // By signature: every hang against all the watched time (9.6 s in 3 h).
  const auto groups = run(TopQuery{}, 1, 1u << 30)->Groups(TopSort::kCount);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_DOUBLE_EQ(*groups[0].hang_seconds_per_hour, 3.2);
  // --label filters lag records as it filters hangs.
  TopQuery only18;
  only18.labels = {{"build", "18"}};
  const auto filtered = run(only18, 1, 1u << 30);
  EXPECT_EQ(filtered->watched_ms(), 3'600'000u);
  EXPECT_EQ(filtered->hosts_total(), 1u);
  // Without lag records: no rate.
  hangwatch::testing::WriteFile(dir / "a.jsonl", Line(H()) + "\n");
  const auto none = run(TopQuery{}, 1, 1u << 30)->Groups(TopSort::kCount);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].hang_seconds_per_hour.has_value());
  EXPECT_TRUE(
      nlohmann::json::parse(FormatTopJson(none, TopBy::kSignature, 0))[0]["hang_seconds_per_hour"]
          .is_null());
}

TEST(ScanTopFiles, BadFilesAreSkippedWithAReason) {
  hangwatch::testing::TempDir dir;
  hangwatch::testing::WriteFile(dir / "gz", std::string("\x1f\x8b\x08\x00rest", 8));
  hangwatch::testing::WriteFile(dir / "empty", "");
  std::vector<std::unique_ptr<TopSink>> sinks;
  const auto stats = ScanTopFiles(
      {dir / "gz", dir / "missing", dir.path(), dir / "empty"}, TopScanOptions{},
      [] { return std::make_unique<TopAggregator>(TopQuery{}); }, &sinks);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_NE(stats[0].error.find("gzip"), std::string::npos) << stats[0].error;
  EXPECT_NE(stats[1].error.find("No such file"), std::string::npos) << stats[1].error;
  EXPECT_EQ(stats[2].error, "a directory");
  EXPECT_EQ(stats[3].error, "");
  EXPECT_EQ(stats[3].lines, 0u);
}

TEST(ParseTopTime, UnixMsAndIso8601) {
  int64_t t = 0;
  ASSERT_TRUE(ParseTopTime("1763700000123", &t));
  EXPECT_EQ(t, 1763700000123);
  ASSERT_TRUE(ParseTopTime("2025-11-21", &t));
  EXPECT_EQ(t, 1763683200000);
  ASSERT_TRUE(ParseTopTime("2025-11-21T04:40", &t));
  EXPECT_EQ(t, 1763683200000 + (4 * 60 + 40) * 60000);
  ASSERT_TRUE(ParseTopTime("2025-11-21T04:40:00.123Z", &t));
  EXPECT_EQ(t, 1763683200000 + (4 * 60 + 40) * 60000 + 123);
  ASSERT_TRUE(ParseTopTime("2025-11-21 06:40:00+02:00", &t));
  EXPECT_EQ(t, 1763683200000 + (4 * 60 + 40) * 60000);
  ASSERT_TRUE(ParseTopTime("2025-11-21T00:00-0130", &t));
  EXPECT_EQ(t, 1763683200000 + 90 * 60000);
  for (const char* bad : {"", "yesterday", "2025-13-01", "2025-11-21T25:00", "2025-11-21T04",
                          "2025-11-21Tx", "2025/11/21", "12ab", "2025-11-21T04:40:00.Z"}) {
    EXPECT_FALSE(ParseTopTime(bad, &t)) << bad;
  }
}

// A cause object as the agent writes it (docs/report-format.md), with fields to skip.
std::string CauseJson(const std::string& kind) {
  return R"({"kind":")" + kind +
         R"(","summary":"waiting for mutex 0x10 held by thread 7 \"w\"","lock":{"type":"mutex",)"
         R"("addr":"0x10"},"owner":{"tid":7,"name":"w","frames":[]},"threads":[]})";
}

TEST(TopAggregator, GroupsByCauseKindAndCountsTheKindsOfEachGroup) {
  std::string text;
  const std::vector<std::pair<std::string, std::string>> hangs = {
      {"lock", "aaaaaaaaaaaaaaaa"}, {"lock", "bbbbbbbbbbbbbbbb"}, {"lock", "aaaaaaaaaaaaaaaa"},
      {"io", "aaaaaaaaaaaaaaaa"},   {"io", "cccccccccccccccc"},   {"", "aaaaaaaaaaaaaaaa"},
      {"null", "cccccccccccccccc"}};
  for (const auto& [kind, signature] : hangs) {
    H h;
    h.signature = signature;
    h.cause = kind.empty() ? "" : kind == "null" ? "null" : CauseJson(kind);
    text += Line(h) + "\n";
  }
  ScanStats stats;
  TopQuery by_cause;
  by_cause.by = TopBy::kCause;
  const auto groups = Group(text, by_cause, &stats);
  EXPECT_EQ(stats.hangs, 7u);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].key, "lock");
  EXPECT_EQ(groups[0].count, 3u);
  EXPECT_EQ(groups[1].count, 2u);  // io and "" (no cause, or null) tie: by key
  EXPECT_EQ(groups[1].key, "");
  EXPECT_EQ(groups[2].key, "io");
  // By signature, each group counts its hangs' kinds, most first.
  const auto by_signature = Group(text, TopQuery{}, &stats);
  ASSERT_EQ(by_signature[0].key, "aaaaaaaaaaaaaaaa");
  const std::vector<std::pair<std::string, uint64_t>> kinds = {{"lock", 2}, {"", 1}, {"io", 1}};
  EXPECT_EQ(by_signature[0].causes, kinds);
  TopTextOptions o;
  o.hangs = 7;
  o.files = 1;
  o.by = TopBy::kCause;
  const std::string table = FormatTopText(groups, o);
  EXPECT_NE(table.find("(by cause)"), std::string::npos) << table;
  EXPECT_NE(table.find("CAUSE"), std::string::npos) << table;
  EXPECT_NE(table.find("  lock       Work()"), std::string::npos) << table;
  const std::string signature_table = FormatTopText(by_signature, TopTextOptions{});
  EXPECT_NE(signature_table.find("  lock+1     Work()"), std::string::npos) << signature_table;
  const auto json = nlohmann::json::parse(FormatTopJson(by_signature, TopBy::kSignature, 0));
  EXPECT_EQ(json[0]["causes"][0]["kind"], "lock");
  EXPECT_EQ(json[0]["causes"][0]["count"], 2);
  EXPECT_TRUE(json[0]["causes"][1]["kind"].is_null());
  // A mistyped cause is a bad line, as any mistyped top-level field; inside the object nothing
  // is checked (reading rule 5): a kind that is not a string is no kind.
  H bad;
  bad.cause = R"("lock")";
  EXPECT_EQ(Kind(Line(bad)), LineKind::kBad);
  H odd;
  odd.cause = R"({"kind":3})";
  EXPECT_EQ(Kind(Line(odd)), LineKind::kHang);
}

// --by context: the innermost label, else the source, else the trigger's kind
// (report::ContextKey); hangs without context are one group, "-" in the table.
// The main thread's longest queued + running pass over its lag records (the "delay" of those
// that have one, the own max of those that do not), with the passes that had waited: one line.
TEST(TopAggregator, LongestInputDelayOfTheLagRecords) {
  report::Lag plain;
  plain.pid = 1;
  plain.start_unix_ms = 1000;
  plain.end_unix_ms = 61000;
  for (int i = 0; i < 20; ++i) plain.passes.Add(2'000'000);
  plain.passes.Add(90'000'000);  // the longest pass of all: 90 ms, no wait known
  report::Lag queued = plain;
  queued.passes = PassHistogram();
  for (int i = 0; i < 20; ++i) queued.passes.Add(2'000'000);
  for (int i = 0; i < 19; ++i) queued.delay.Add(2'000'000);
  queued.delay.Add(150'000'000);
  queued.queued_passes = 3;
  report::Lag render = queued;  // another role's: not the main thread's line
  render.thread_role = "render";
  render.delay.Add(900'000'000);
  const std::string text =
      report::Encode(plain) + "\n" + report::Encode(queued) + "\n" + report::Encode(render) + "\n";
  TopQuery q;
  TopLineParser parser(false);
  TopAggregator agg(q);
  ScanStats stats;
  ScanTopText(text, 0, 0, &parser, &agg, &stats);
  EXPECT_NEAR(agg.delay_max_ms(), 150, 2);
  EXPECT_EQ(agg.queued_passes(), 3u);
  TopTextOptions o;
  o.delay_max_ms = agg.delay_max_ms();
  o.queued_passes = agg.queued_passes();
  o.watched_ms = agg.watched_ms();
  EXPECT_NE(
      FormatTopText({}, o).find("longest input delay 149.9 ms (queued + running, main thread; "
                                "3 passes had waited)"),
      std::string::npos)
      << FormatTopText({}, o);  // 150 ms, as its bucket's midpoint
  // Without any wait known, no line: the running figures are the report's.
  TopAggregator none(q);
  ScanTopText(report::Encode(plain) + "\n", 0, 0, &parser, &none, &stats);
  EXPECT_EQ(none.queued_passes(), 0u);
  o.queued_passes = 0;
  EXPECT_EQ(FormatTopText({}, o).find("input delay"), std::string::npos);
}

TEST(TopAggregator, GroupsByContextKey) {
  const std::string contexts[] = {
      R"(,"context":{"label":"thumbnail.decode","label_path":["request","thumbnail.decode"],)"
      R"("source":"idle","trigger":{"kind":"tcp"}},"perceived":true)",
      R"(,"context":{"label_path":["thumbnail.decode"]})",
      R"(,"context":{"source":"idle","trigger":{"kind":"tcp"}})",
      R"(,"context":{"trigger":{"kind":"timer","detail":"timerfd","fd":5}},"perceived":false)",
      "",
  };
  std::string text;
  for (const std::string& c : contexts) {
    H h;
    h.context = c;
    text += Line(h) + "\n";
  }
  TopHang parsed;
  H first;
  first.context = contexts[0];
  ASSERT_EQ(Kind(Line(first), &parsed), LineKind::kHang);
  EXPECT_EQ(parsed.context_key, "thumbnail.decode");
  EXPECT_EQ(parsed.perceived, 1);
  ScanStats stats;
  TopQuery by_context;
  by_context.by = TopBy::kContext;
  const auto groups = Group(text, by_context, &stats);
  EXPECT_EQ(stats.hangs, 5u);
  EXPECT_EQ(stats.bad_lines, 0u);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].key, "thumbnail.decode");
  EXPECT_EQ(groups[0].count, 2u);
  EXPECT_EQ(groups[1].key, "");  // ties broken by key
  EXPECT_EQ(groups[2].key, "idle");
  EXPECT_EQ(groups[3].key, "timer");
  TopTextOptions o;
  o.hangs = 5;
  o.files = 1;
  o.by = TopBy::kContext;
  const std::string table = FormatTopText(groups, o);
  EXPECT_NE(table.find("(by context)"), std::string::npos) << table;
  EXPECT_NE(table.find(" thumbnail.decode\n"), std::string::npos) << table;
  // A context member of the wrong type makes the line bad, as the decoder says.
  H bad;
  bad.context = R"(,"context":{"label":7})";
  EXPECT_EQ(Kind(Line(bad)), LineKind::kBad);
}

// Python hangs of three runs: their code objects elsewhere each time, the third busy
// at another line of the same function. One group by signature, one by culprit (the function,
// every line of it), named as py-spy names a function, never by a code object's address.
TEST(TopAggregator, PythonHangsOfSeveralRunsAreOneGroup) {
  std::string text;
  for (uint64_t run = 0; run < 3; ++run) {
    HangRecord h = hangwatch::testing::PythonHang(run * 0x1230000, run);
    h.pid = static_cast<int64_t>(100 + run);
    if (run == 2) {
      h.stacks[0].frames[3].line = 43;
      h.culprit.line = 43;
    }
    text += report::Encode(h) + "\n";
  }
  ScanStats stats;
  const auto groups = Group(text, TopQuery{}, &stats);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 3u);
  EXPECT_EQ(groups[0].processes, 3u);
  ASSERT_TRUE(groups[0].culprit);
  EXPECT_EQ(groups[0].culprit->language, FrameLanguage::kPython);
  EXPECT_EQ(groups[0].culprit->symbol, "Handler.handle_request");
  EXPECT_EQ(groups[0].culprit->line, 42);
  TopQuery by_culprit;
  by_culprit.by = TopBy::kCulprit;
  const auto culprits = Group(text, by_culprit, &stats);
  ASSERT_EQ(culprits.size(), 1u);
  EXPECT_EQ(culprits[0].key, "Handler.handle_request (app.py)");
  TopTextOptions o;
  o.hangs = 3;
  o.files = 1;
  const std::string table = FormatTopText(groups, o);
  EXPECT_NE(table.find("Handler.handle_request (app.py:42)"), std::string::npos) << table;
  EXPECT_EQ(table.find("(app.py:42) (app.py:42)"), std::string::npos) << table;
  const auto j = nlohmann::json::parse(FormatTopJson(groups, TopBy::kSignature, 10));
  EXPECT_EQ(j[0]["culprit"]["kind"], "python") << j.dump();
  EXPECT_EQ(j[0]["culprit"]["file"], "/srv/app.py") << j.dump();
}

TEST(FormatTop, DurationsAndTable) {
  EXPECT_EQ(FormatTopDuration(412), "412ms");
  EXPECT_EQ(FormatTopDuration(1234), "1.2s");
  EXPECT_EQ(FormatTopDuration(192'000), "3m12s");
  EXPECT_EQ(FormatTopDuration(7'500'000), "2h05m");
  ScanStats stats;
  const auto groups = Group(Line(H{}) + "\n", TopQuery{}, &stats);
  TopTextOptions o;
  o.hangs = 1;
  o.files = 1;
  const std::string text = FormatTopText(groups, o);
  EXPECT_NE(text.find("1 hang in 1 group (by signature) from 1 file\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Work() (demo.cc:42)"), std::string::npos) << text;
  EXPECT_NE(text.find("aaaaaaaaaaaaaaaa"), std::string::npos) << text;
}

}  // namespace
}  // namespace hangwatch::tools
