// `hangwatch exporter`'s parts without a server: the metrics computed from records
// (hangwatch_prometheus_metrics.h), the skip reasons of the line counter (record_counter.h) and the
// follower (tools/reader/report_follower.h) on files appended to, rotated, truncated and created
// while it follows them.
#include <prometheus/registry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hangwatch_prometheus_metrics.h"
#include "report/report_record.h"
#include "tests/tools/cli_util.h"
#include "tests/tools/python_hang.h"
#include "tests/tools/thread_lines.h"
#include "tools/exporter/record_counter.h"
#include "tools/reader/report_follower.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::TempDir;

// The value of `name`'s series whose labels include `want` (summed over them): counters, and
// for a histogram the cumulative count of bucket `le` (in `want`) or, without it, the count.
double Value(prometheus::Registry& registry, const std::string& name,
             std::map<std::string, std::string> want = {}) {
  double total = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      bool match = true;
      for (const auto& [k, v] : want) {
        if (k == "le") continue;
        bool found = false;
        for (const auto& l : m.label) found |= l.name == k && l.value == v;
        match &= found;
      }
      if (!match) continue;
      if (family.type == prometheus::MetricType::Histogram) {
        if (want.count("le") == 0) {
          total += static_cast<double>(m.histogram.sample_count);
        } else {
          for (const auto& b : m.histogram.bucket) {
            if (std::to_string(b.upper_bound) == std::to_string(std::stod(want["le"]))) {
              total += static_cast<double>(b.cumulative_count);
            }
          }
        }
      } else {
        total += m.counter.value;
      }
    }
  }
  return total;
}

// Number of series of `name`.
size_t Series(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name == name) return family.metric.size();
  }
  return 0;
}

HangRecord Hang(const std::string& process, HangClass c, uint64_t duration_ms) {
  HangRecord h;
  h.pid = 7;
  h.tid = 7;
  h.process = "/usr/bin/" + process;
  h.process_name = process;
  h.host = "web-1";
  h.hang_class = c;
  h.duration_ms = duration_ms;
  h.start_unix_ms = 1763700000000;
  return h;
}

struct TestLag {
  std::string process_name, host;
  std::map<std::string, std::string> labels;
  PassHistogram passes;
};

void Add(HangMetrics& metrics, const TestLag& lag) {
  metrics.AddLag(lag.process_name, lag.host, lag.labels, 0, 0, lag.passes);
}

TestLag LagOf(const std::vector<std::pair<uint64_t, uint64_t>>& ns_count) {
  TestLag lag;
  lag.process_name = "demo";
  lag.host = "web-1";
  lag.labels["build"] = "17";
  for (const auto& [ns, count] : ns_count) {
    for (uint64_t i = 0; i < count; ++i) lag.passes.Add(ns);
  }
  return lag;
}

TEST(HangMetricsTest, CountsHangsByClassAndCauseWithTheirSeconds) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  HangRecord a = Hang("api", HangClass::kBusy, 1500);
  a.labels["build"] = "17";
  metrics.AddHang(a, "");
  metrics.AddHang(Hang("api", HangClass::kBlocked, 500), "lock");
  HangRecord fatal = Hang("api", HangClass::kBlocked, 2000);
  fatal.fatal = true;
  metrics.AddHang(fatal, "lock");

  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"class", "busy"}, {"cause", "unknown"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"class", "blocked"}, {"cause", "lock"}}), 2);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"build", "17"}}), 1);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total", {{"class", "blocked"}}), 2.5);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total"), 4.0);
  EXPECT_EQ(Value(registry, "hangwatch_fatal_hangs_total", {{"process", "api"}}), 1);
  // No culprit label unless asked.
  for (const auto& family : registry.Collect()) {
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) EXPECT_NE(l.name, "culprit") << family.name;
    }
  }
}

TEST(HangMetricsTest, PassHistogramKeepsTheThresholdsWithinOneLagBucket) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  // 900 passes of 1 ms, 80 of 20 ms, 15 of 40 ms, 5 of 1.5 s.
  Add(metrics, LagOf({{1'000'000, 900}, {20'000'000, 80}, {40'000'000, 15}, {1'500'000'000, 5}}));
  const std::map<std::string, std::string> demo = {
      {"process", "demo"}, {"host", "web-1"}, {"build", "17"}};
  auto le = [&](const char* bound) {
    auto want = demo;
    want["le"] = bound;
    return Value(registry, "hangwatch_pass_duration_seconds", want);
  };
  EXPECT_EQ(Value(registry, "hangwatch_pass_duration_seconds", demo), 1000);
  EXPECT_EQ(le("0.001"), 0);  // 1 ms passes land in the bucket whose midpoint is just above
  EXPECT_EQ(le("0.002"), 900);
  EXPECT_EQ(le("0.016"), 900);
  EXPECT_EQ(le("0.033"), 980);
  EXPECT_EQ(le("0.05"), 995);
  EXPECT_EQ(le("1"), 995);
  EXPECT_EQ(le("2"), 1000);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total", demo), 1000);
  EXPECT_NEAR(Value(registry, "hangwatch_busy_seconds_total", demo), 0.9 + 1.6 + 0.6 + 7.5, 1e-9);
  // A second interval adds to the same series.
  Add(metrics, LagOf({{3'000'000, 10}}));
  EXPECT_EQ(Value(registry, "hangwatch_passes_total", demo), 1010);
  EXPECT_EQ(le("0.005"), 910);
}

TEST(HangMetricsTest, LabelNamesAreMadeValidAndNeverReplaceTheExportersOwn) {
  EXPECT_EQ(LabelName("build"), "build");
  EXPECT_EQ(LabelName("k8s.pod-name"), "k8s_pod_name");
  EXPECT_EQ(LabelName("9lives"), "_9lives");
  EXPECT_EQ(LabelName("__name__"), "label__name__");
  EXPECT_EQ(LabelName("host"), "label_host");
  EXPECT_EQ(LabelName("le"), "label_le");
  EXPECT_EQ(LabelName(""), "_");
  EXPECT_EQ(CauseLabel("lock"), "lock");
  EXPECT_EQ(CauseLabel("io_wait"), "io_wait");
  EXPECT_EQ(CauseLabel(""), "unknown");
  EXPECT_EQ(CauseLabel("Lock\n{x=\"y\"}"), "unknown");
  EXPECT_EQ(CauseLabel(std::string(40, 'a')), "unknown");

  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  HangRecord h = Hang("api", HangClass::kBusy, 100);
  h.labels["host"] = "spoofed";
  metrics.AddHang(h, "");
  EXPECT_EQ(
      Value(registry, "hangwatch_hangs_total", {{"host", "web-1"}, {"label_host", "spoofed"}}), 1);
}

TEST(HangMetricsTest, LabelSetsBeyondTheLimitAreSkippedNotNewSeries) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.max_label_sets = 3;
  HangMetrics metrics(registry, options);
  for (int i = 0; i < 10; ++i) {
    HangRecord h = Hang("api", HangClass::kBusy, 100);
    h.labels["request"] = std::to_string(i);
    metrics.AddHang(h, "");
  }
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Series(registry, "hangwatch_hangs_total"), 3u * 4u);  // each class at 0 first
  EXPECT_EQ(Value(registry, "hangwatch_exporter_lines_skipped_total", {{"reason", "series_limit"}}),
            7);
}

TEST(HangMetricsTest, CulpritTopNBoundsTheCulpritLabel) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.culprit_top = 2;
  HangMetrics metrics(registry, options);
  auto with_culprit = [](const std::string& symbol) {
    HangRecord h = Hang("api", HangClass::kBusy, 1000);
    h.culprit.symbol = symbol;
    h.culprit.module = "/usr/bin/api";
    h.culprit.frame = 0;
    return h;
  };
  // Two culprits hang often; forty others once each.
  for (int i = 0; i < 5; ++i) {
    metrics.AddHang(with_culprit("Parse"), "");
    metrics.AddHang(with_culprit("Flush"), "");
  }
  for (int i = 0; i < 40; ++i) metrics.AddHang(with_culprit("Rare" + std::to_string(i)), "");
  metrics.AddHang(HangRecord(Hang("api", HangClass::kBusy, 1000)), "");

  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"culprit", "Parse"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"culprit", "Flush"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"culprit", "none"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 51);
  // At most 2 * N culprits by name, plus "other" and "none".
  EXPECT_LE(Series(registry, "hangwatch_hangs_total"), 2u * 2u + 2u);
  EXPECT_GE(Value(registry, "hangwatch_hangs_total", {{"culprit", "other"}}), 38);
}

HangRecord WithContext(const std::string& label, std::optional<bool> perceived) {
  HangRecord h = Hang("api", HangClass::kBusy, 1000);
  if (!label.empty()) h.context.label_path = {"request", label};
  h.perceived = perceived;
  return h;
}

// Off by default: no series gets a `context` label and the hang series keep their labels;
// hangwatch_perceived_hangs_total counts the hangs a person waited through, with the hangs'
// labels.
TEST(HangMetricsTest, ContextLabelIsOffByDefaultAndPerceivedHangsAreCounted) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  metrics.AddHang(WithContext("thumbnail.decode", true), "");
  metrics.AddHang(WithContext("thumbnail.decode", false), "lock");
  metrics.AddHang(WithContext("", std::nullopt), "");
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Value(registry, "hangwatch_perceived_hangs_total"), 1);
  EXPECT_EQ(Value(registry, "hangwatch_perceived_hangs_total",
                  {{"class", "busy"}, {"cause", "unknown"}, {"process", "api"}}),
            1);
  for (const auto& family : registry.Collect()) {
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) EXPECT_NE(l.name, "context") << family.name;
      if (family.name != "hangwatch_hangs_total") continue;
      std::vector<std::string> names;
      for (const auto& l : m.label) names.push_back(l.name);
      EXPECT_EQ(names, (std::vector<std::string>{"cause", "class", "host", "process"}));
    }
  }
}

// --context-top N: culprit_top's rule for contexts.
TEST(HangMetricsTest, ContextTopNBoundsTheContextLabel) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.context_top = 2;
  HangMetrics metrics(registry, options);
  for (int i = 0; i < 5; ++i) {
    metrics.AddHang(WithContext("thumbnail.decode", true), "");
    metrics.AddHang(WithContext("db.query", false), "");
  }
  for (int i = 0; i < 40; ++i) metrics.AddHang(WithContext("rare" + std::to_string(i), true), "");
  HangRecord record_label = WithContext("", std::nullopt);
  record_label.labels["context"] = "mine";  // a record label of that name moves aside
  metrics.AddHang(record_label, "");

  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"context", "thumbnail.decode"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"context", "db.query"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"context", "none"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"label_context", "mine"}}), 1);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total", {{"context", "db.query"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 51);
  EXPECT_LE(Series(registry, "hangwatch_hangs_total"), 2u * 2u + 2u);
  EXPECT_GE(Value(registry, "hangwatch_hangs_total", {{"context", "other"}}), 38);
  // The perceived counter has no context label: one series per label set, class and cause.
  EXPECT_EQ(Value(registry, "hangwatch_perceived_hangs_total"), 45);
  for (const auto& family : registry.Collect()) {
    if (family.name != "hangwatch_perceived_hangs_total") continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) EXPECT_NE(l.name, "context");
    }
  }
}

// hangwatch_input_delay_seconds: one sample per hang whose input had an age, in seconds; hangs
// without input waiting add none. The exporter reads the age from the line.
TEST(HangMetricsTest, InputDelayIsTheOldestInputsAgePerHang) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  RecordCounter counter(&metrics);
  HangRecord h = WithContext("", true);
  h.pid = 5;
  h.tid = 5;
  h.input.known = h.input.pending = h.input.oldest_known = true;
  h.input.events = 6;
  h.input.kinds = {"key"};
  h.input.oldest_ms = 1200;
  counter.Count(report::Encode(h));
  metrics.AddHang(WithContext("", false), "");  // nothing waited: no sample
  double count = 0, sum = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != "hangwatch_input_delay_seconds") continue;
    for (const auto& m : family.metric) {
      count += static_cast<double>(m.histogram.sample_count);
      sum += m.histogram.sample_sum;
    }
  }
  EXPECT_EQ(count, 1);
  EXPECT_DOUBLE_EQ(sum, 1.2);
}

// The exporter reads the context's key and perceived from the line (top's parser).
TEST(RecordCounterTest, ContextAndPerceivedAreReadFromTheLine) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.context_top = 4;
  HangMetrics metrics(registry, options);
  RecordCounter counter(&metrics);
  HangRecord h = WithContext("thumbnail.decode", true);
  h.pid = 5;
  h.tid = 5;
  counter.Count(report::Encode(h));
  h.context = Context{};
  h.context.has_trigger = true;
  h.context.trigger.kind = "timerfd";  // as written before kinds were split: read as "timer"
  h.perceived = false;
  counter.Count(report::Encode(h));
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"context", "thumbnail.decode"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"context", "timer"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_perceived_hangs_total"), 1);
}

constexpr char kLagLine[] =
    R"({"type":"lag","format_version":1,"pid":4242,"process_name":"demo","host":"web-7",)"
    R"("start_unix_ms":1763700000000,"end_unix_ms":1763700060000,"busy_ms":4300.000,)"
    R"("buckets":[[1007.616,1900],[20185.088,80],[40370.176,20]]})";

std::string HangLine(uint64_t duration_ms, const std::string& extra = "") {
  std::string line = R"({"type":"hang","format_version":1,"pid":1,"tid":1,"process":"/bin/a",)";
  line += R"("process_name":"a","host":"h","start_unix_ms":1763700000123,"duration_ms":)";
  line += std::to_string(duration_ms);
  line += R"(,"cpu_ms":10,"class":"blocked","samples":3,"stacks":[])";
  line += extra;
  line += "}";
  return line;
}

// hangwatch_pass_delay_seconds: every pass at its queued + running time, read from a lag line's
// "delay" when it has one, at its duration when not (the same count as the durations').
TEST(RecordCounterTest, PassDelayIsTheQueuedPlusRunningHistogram) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  RecordCounter counter(&metrics);
  report::Lag queued;
  queued.pid = 1;
  queued.start_unix_ms = 1;
  queued.end_unix_ms = 2;
  for (int i = 0; i < 10; ++i) queued.passes.Add(1'000'000);
  for (int i = 0; i < 9; ++i) queued.delay.Add(1'000'000);
  queued.delay.Add(300'000'000);  // one pass whose timer had waited 299 ms
  queued.queued_passes = 1;
  counter.Count(report::Encode(queued));
  report::Lag plain = queued;
  plain.delay = PassHistogram();
  plain.queued_passes = 0;
  counter.Count(report::Encode(plain));
  EXPECT_EQ(Value(registry, "hangwatch_pass_duration_seconds"), 20);
  EXPECT_EQ(Value(registry, "hangwatch_pass_delay_seconds"), 20);
  EXPECT_EQ(Value(registry, "hangwatch_pass_duration_seconds", {{"le", "0.1"}}), 20);
  EXPECT_EQ(Value(registry, "hangwatch_pass_delay_seconds", {{"le", "0.1"}}), 19);
}

TEST(RecordCounterTest, CountsHangsAndLagAndSkipsWhatItCannotRead) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  RecordCounter counter(&metrics);
  const auto CountLine = [&](std::string_view line, HangMetrics*) { counter.Count(line); };
  CountLine(HangLine(300), &metrics);
  CountLine(HangLine(200, R"(,"cause":{"kind":"lock","owner_tid":12})"), &metrics);
  CountLine(kLagLine, &metrics);
  // A cause that is not an object is a mistyped top-level field: a bad line, as for top.
  CountLine(HangLine(100, R"(,"cause":"lock")"), &metrics);
  CountLine(HangLine(100, R"(,"cause":{"kind":7})"), &metrics);  // kind not a string: unknown
  CountLine(R"({"type":"lag","format_version":1,"pid":1,"start_unix_ms":1,"end_unix_ms":2,)"
            R"("busy_ms":1,"buckets":[["x",1]]})",
            &metrics);  // buckets that are not [bound, count]: torn
  CountLine(R"({"type":"hang","format_version":1,"pid":1,"tid)", &metrics);  // torn
  CountLine("not json", &metrics);
  CountLine(R"({"type":"gc_pause","format_version":1})", &metrics);
  CountLine(R"({"type":"hang","format_version":3,"pid":1})", &metrics);
  CountLine(R"({"type":"startup_stall","pid":1,"start_unix_ms":1,"duration_ms":9})", &metrics);

  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"cause", "lock"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"cause", "unknown"}}), 2);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total"), 0.6);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total"), 2000);
  EXPECT_EQ(Value(registry, "hangwatch_watched_seconds_total"), 60);
  EXPECT_EQ(Value(registry, "hangwatch_exporter_lines_skipped_total", {{"reason", "torn"}}), 4);
  EXPECT_EQ(Value(registry, "hangwatch_exporter_lines_skipped_total", {{"reason", "unknown_type"}}),
            1);
  EXPECT_EQ(
      Value(registry, "hangwatch_exporter_lines_skipped_total", {{"reason", "other_version"}}), 1);
}

// A Python culprit read from its line: the culprit label is the function and its
// file's base name, the same series for every line of it and every run (code objects move).
TEST(RecordCounterTest, PythonCulpritLabelIsItsFunction) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.culprit_top = 2;
  HangMetrics metrics(registry, options);
  RecordCounter counter(&metrics);
  for (uint64_t run = 0; run < 3; ++run) {
    HangRecord h = hangwatch::testing::PythonHang(run * 0x10000, run);
    h.culprit.line = 42 + static_cast<int>(run);
    counter.Count(report::Encode(h));
  }
  EXPECT_EQ(
      Value(registry, "hangwatch_hangs_total", {{"culprit", "Handler.handle_request (app.py)"}}),
      3);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
}

// A culprit without a name is labelled as every reader names it: module file name and offset,
// and its offset alone outside any module (the adapter said "+0x7f00aa").
TEST(HangMetricsTest, UnnamedCulpritsAreLabelledByModuleAndOffset) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.culprit_top = 2;
  HangMetrics metrics(registry, options);
  HangRecord jit;
  jit.culprit.offset = 0x7f00aa;
  jit.culprit.frame = 0;
  HangRecord in_module = jit;
  in_module.culprit.module = "/usr/lib/libfoo.so";
  metrics.AddHang(jit, "");
  metrics.AddHang(in_module, "");
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"culprit", "0x7f00aa"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"culprit", "libfoo.so+0x7f00aa"}}), 1);
}

// Collects what the exporter's ReportFollower (tools/reader/report_follower.h) hands over.
struct Seen {
  std::vector<std::string> lines;
  std::map<std::string, int> skipped;
  void Poll(ReportFollower& tail) {
    tail.Poll([&](std::string_view l) { lines.emplace_back(l); },
              [&](ReportFollower::Event e) { ++skipped[std::string(SkipReason(e))]; });
  }
};

ReportFollower::Options Grace(std::chrono::milliseconds grace) {
  ReportFollower::Options o;
  o.grace = grace;
  return o;
}

void Append(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "a");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

TEST(ReportFollowerTest, ReadsAppendsAndWaitsForTheEndOfAPartialLine) {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  Append(path, "one\ntw");
  ReportFollower tail({path});
  Seen seen;
  seen.Poll(tail);
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"one"}));
  seen.Poll(tail);
  EXPECT_EQ(seen.lines.size(), 1u);
  Append(path, "o\nthree\n");
  seen.Poll(tail);
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_TRUE(seen.skipped.empty());
}

TEST(ReportFollowerTest, FollowsARotationToDotOneAndTheNewFile) {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  Append(path, "a1\n");
  ReportFollower tail({path}, Grace(std::chrono::milliseconds(0)));
  Seen seen;
  seen.Poll(tail);
  // Rotation between two polls: lines appended before it to the old file are still read.
  Append(path, "a2\n");
  ASSERT_EQ(rename(path.c_str(), (path + ".1").c_str()), 0);
  Append(path, "b1\n");
  seen.Poll(tail);
  std::sort(seen.lines.begin(), seen.lines.end());
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"a1", "a2", "b1"}));
  EXPECT_EQ(tail.files(), 1u);  // the old file, no longer named, was read to its end and closed
  Append(path, "b2\n");
  seen.Poll(tail);
  EXPECT_EQ(seen.lines.back(), "b2");
  EXPECT_EQ(seen.lines.size(), 4u);
}

TEST(ReportFollowerTest, ARotatedFileIsReadDuringTheGracePeriodAndItsTornTailCounted) {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  Append(path, "a1\n");
  ReportFollower tail({path}, Grace(std::chrono::milliseconds(60'000)));
  Seen seen;
  seen.Poll(tail);
  ASSERT_EQ(rename(path.c_str(), (path + ".1").c_str()), 0);
  seen.Poll(tail);
  // The writer still holds the old file: what it appends there is read too.
  Append(path + ".1", "a2\n");
  seen.Poll(tail);
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(tail.files(), 1u);

  // Without a grace period, a file closed with half a line counts it as torn.
  const std::string other = dir / "s.jsonl";
  Append(other, "x1\nx2-half");
  ReportFollower quick({other}, Grace(std::chrono::milliseconds(0)));
  Seen q;
  q.Poll(quick);
  ASSERT_EQ(unlink(other.c_str()), 0);
  q.Poll(quick);
  EXPECT_EQ(q.lines, (std::vector<std::string>{"x1"}));
  EXPECT_EQ(q.skipped["torn"], 1);
  EXPECT_EQ(quick.files(), 0u);
}

TEST(ReportFollowerTest, WithAGlobTheRotatedFileIsNotReadTwice) {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  Append(path, "a1\n");
  ReportFollower tail({dir / "r.jsonl*"}, Grace(std::chrono::milliseconds(0)));
  Seen seen;
  seen.Poll(tail);
  ASSERT_EQ(rename(path.c_str(), (path + ".1").c_str()), 0);
  Append(path, "b1\n");
  seen.Poll(tail);
  seen.Poll(tail);
  std::sort(seen.lines.begin(), seen.lines.end());
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(tail.files(), 2u);
}

TEST(ReportFollowerTest, StartsOverAfterTruncation) {
  TempDir dir;
  const std::string path = dir / "r.jsonl";
  Append(path, "first line\nsecond line\n");
  ReportFollower tail({path});
  Seen seen;
  seen.Poll(tail);
  ASSERT_EQ(truncate(path.c_str(), 0), 0);  // copytruncate
  Append(path, "new\n");
  seen.Poll(tail);
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"first line", "second line", "new"}));
}

TEST(ReportFollowerTest, FilesAppearingLaterThroughAGlobAreReadFromTheirStart) {
  TempDir dir;
  ReportFollower tail({dir / "*.jsonl", dir / "missing.jsonl"});
  Seen seen;
  seen.Poll(tail);
  EXPECT_TRUE(seen.lines.empty());
  EXPECT_TRUE(seen.skipped.empty());  // a missing file is not an error: it may appear later
  Append(dir / "host-a.jsonl", "a\n");
  Append(dir / "host-b.jsonl", "b\n");
  seen.Poll(tail);
  std::sort(seen.lines.begin(), seen.lines.end());
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"a", "b"}));
  Append(dir / "missing.jsonl", "m\n");
  seen.Poll(tail);
  EXPECT_EQ(seen.lines.back(), "m");
}

TEST(ReportFollowerTest, UnreadableFilesAreCountedOnceAndDoNotStopTheOthers) {
  TempDir dir;
  Append(dir / "gz.jsonl", std::string("\x1f\x8b\x08\x00rest", 8));
  ASSERT_EQ(mkdir((dir / "d.jsonl").c_str(), 0755), 0);
  Append(dir / "ok.jsonl", "fine\n");
  ReportFollower tail({dir / "*.jsonl"});
  Seen seen;
  seen.Poll(tail);
  seen.Poll(tail);
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"fine"}));
  EXPECT_EQ(seen.skipped["unreadable"], 2);
  EXPECT_EQ(tail.bytes(), 5u);
}

}  // namespace
}  // namespace hangwatch::tools

namespace hangwatch::tools {
namespace {

// Series of a label: how many series of `name` carry `label` (any value).
size_t SeriesWithLabel(prometheus::Registry& registry, const std::string& name,
                       const std::string& label) {
  size_t n = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) n += l.name == label;
    }
  }
  return n;
}

// Records of watched threads (issue 39): hangs and lag of a role other than main get a `role`
// label (bounded by --max-roles), lag of each role is its own series, never added to main's;
// the main thread's series keep their labels (no role).
TEST(RecordCounterTest, ThreadRolesAreALabelAndLagIsNeverSummedAcrossRoles) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.max_roles = 2;
  HangMetrics metrics(registry, options);
  RecordCounter counter(&metrics);
  const auto count = [&](const std::string& line) {  // without its newline, as the follower
    counter.Count(std::string_view(line).substr(0, line.size() - 1));
  };
  count(testing::ThreadHangLine("main", "1111111111111111", "Parse", 200));
  count(testing::ThreadHangLine("render", "2222222222222222", "Draw", 60));
  count(testing::ThreadHangLine("render", "2222222222222222", "Draw", 70));
  count(testing::ThreadLagLine("main", 1000, 1.0));
  count(testing::ThreadLagLine("render", 100, 30.0));
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "render"}}), 2);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total", {{"role", "render"}}), 0.13);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total", {{"role", "render"}}), 100);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total"), 1100);  // two series: main's has 1000
  EXPECT_EQ(
      Value(registry, "hangwatch_pass_duration_seconds", {{"role", "render"}, {"le", "0.016"}}), 0);
  EXPECT_EQ(Value(registry, "hangwatch_watched_seconds_total", {{"role", "render"}}), 60);
  // Main's series: no role label at all.
  EXPECT_EQ(SeriesWithLabel(registry, "hangwatch_passes_total", "role"), 1u);
  EXPECT_EQ(Series(registry, "hangwatch_passes_total"), 2u);
  // Bounded: past two roles, "other".
  count(testing::ThreadHangLine("io", "3333333333333333", "Read", 90));
  count(testing::ThreadHangLine("gc", "4444444444444444", "Mark", 90));
  count(testing::ThreadHangLine("audio", "5555555555555555", "Mix", 90));
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "io"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "other"}}), 2);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "gc"}}), 0);
}

}  // namespace
}  // namespace hangwatch::tools
