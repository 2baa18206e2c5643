// hangwatch::RegisterMetrics (integrations/prometheus/): a program that embeds the agent
// (prometheus_embed_program.cc) serves the metrics from its own registry, scraped by Debian's
// prometheus (real_component); the figures Prometheus gives back must be those of the records
// the same agent wrote to its report. Below it, the `role` label of watched threads other than
// main (hangwatch/threads.h): from records given to HangMetrics, and from the agent of this
// process through RegisterMetrics.
#include <sys/stat.h>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hangwatch/hangwatch.h"
#include "hangwatch/pass_histogram.h"
#include "hangwatch/threads.h"
#include "hangwatch_prometheus.h"
#include "hangwatch_prometheus_metrics.h"
#include "tests/integrations/busy_wait.h"
#include "tests/prometheus_server.h"
#include "tests/tools/cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch {
namespace {

using testing::Child;
using testing::PrometheusServer;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;

size_t BucketIndex(double seconds) {
  const auto& b = PassDurationBuckets();
  return static_cast<size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin());
}

TEST(PrometheusRegistryTest, TheEmbeddedAgentsMetricsAreTheRecordsItWrote) {
  if (access(testing::kPrometheus, X_OK) != 0) {
    GTEST_SKIP() << testing::kPrometheus << " is missing (Debian: prometheus)";
  }
  TempDir dir;
  const std::string report = dir / "h.jsonl", log = dir / "program.log";
  Child program({PROMETHEUS_EMBED_PROGRAM, report, "3", "300"}, log);
  int port = 0;
  ASSERT_TRUE(WaitFor([&] {
    const std::string text = ReadFile(log);
    return text.rfind("port ", 0) == 0 && (port = std::atoi(text.c_str() + 5)) > 0;
  })) << ReadFile(log);
  const PrometheusServer prometheus(dir.path(), {"127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log).find("done\n") != std::string::npos; }))
      << ReadFile(log);

  tools::Report records;
  std::string error;
  ASSERT_TRUE(tools::ReadReportFile(report, &records, &error)) << error;
  ASSERT_EQ(records.hangs.size(), 3u);
  ASSERT_FALSE(records.lags.empty());
  uint64_t hang_ms = 0, watched_ms = 0;
  for (const HangRecord& h : records.hangs) hang_ms += h.duration_ms;
  PassHistogram passes;
  for (const auto& l : records.lags) {
    passes.Merge(l.passes);
    watched_ms += static_cast<uint64_t>(l.end_unix_ms - l.start_unix_ms);
  }
  // Each is a pass over the 100 ms threshold (the figures compared below are the records').
  EXPECT_GT(hang_ms, 3u * 100u);

  EXPECT_TRUE(WaitFor([&] { return prometheus.Query("sum(hangwatch_hangs_total)") == 3.0; }))
      << prometheus.Query("sum(hangwatch_hangs_total)").value_or(-1) << "\n"
      << prometheus.Log();
  EXPECT_TRUE(WaitFor([&] {
    return prometheus.Query("sum(hangwatch_passes_total)") == static_cast<double>(passes.passes());
  })) << passes.passes()
      << " passes in the lag records";
  const auto seconds = prometheus.Query("sum(hangwatch_hang_seconds_total)");
  ASSERT_TRUE(seconds.has_value());
  EXPECT_NEAR(*seconds, static_cast<double>(hang_ms) / 1000.0, 1e-9);
  // Busy hangs are labelled with their class and the build; their cause label may differ (cpu,
  // or starved on a busy machine), so their series are summed over it.
  EXPECT_EQ(prometheus.Query("count(sum by (class, build) "
                             "(hangwatch_hangs_total{class=\"busy\",build=\"7\"}) > 0)"),
            1.0);
  // The cause label is the record's cause.kind, as `hangwatch exporter` labels the same line.
  const auto asleep =
      std::count_if(records.hangs.begin(), records.hangs.end(),
                    [](const HangRecord& h) { return h.cause.kind == CauseKind::kSleep; });
  EXPECT_EQ(asleep, 1);
  EXPECT_TRUE(WaitFor([&] {
    return prometheus.Query("sum(hangwatch_hangs_total{cause=\"sleep\",build=\"7\"})") == 1.0;
  })) << prometheus.Query("sum(hangwatch_hangs_total{cause=\"sleep\"})").value_or(-1);
  const auto watched = prometheus.Query("sum(hangwatch_watched_seconds_total)");
  ASSERT_TRUE(watched.has_value());
  EXPECT_NEAR(*watched, static_cast<double>(watched_ms) / 1000.0, 1e-9);
  const auto p99 = prometheus.Query(
      "histogram_quantile(0.99, sum by (le) (hangwatch_pass_duration_seconds_bucket))");
  ASSERT_TRUE(p99.has_value());
  const double want = passes.Figures().p99_ms / 1000.0;
  EXPECT_LE(std::labs(static_cast<long>(BucketIndex(*p99)) - static_cast<long>(BucketIndex(want))),
            1)
      << *p99 << " vs " << want;
  const auto rate = prometheus.Query(
      "3600 * sum(hangwatch_hang_seconds_total) / sum(hangwatch_watched_seconds_total)");
  ASSERT_TRUE(rate.has_value());
  EXPECT_NEAR(*rate, 3600.0 * static_cast<double>(hang_ms) / static_cast<double>(watched_ms), 1e-6);
  EXPECT_EQ(program.Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace hangwatch

namespace hangwatch {
namespace {

using Labels = std::map<std::string, std::string>;

// The sum of the series of `name` whose labels include `want` (a histogram: its sample count).
double Value(prometheus::Registry& registry, const std::string& name, const Labels& want = {}) {
  double total = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      size_t found = 0;
      for (const auto& l : m.label) {
        auto it = want.find(l.name);
        found += it != want.end() && it->second == l.value;
      }
      if (found != want.size()) continue;
      total += family.type == prometheus::MetricType::Histogram
                   ? static_cast<double>(m.histogram.sample_count)
                   : m.counter.value;
    }
  }
  return total;
}

// Each series of `name`: its labels and value (a histogram: its sample count).
std::vector<std::pair<Labels, double>> SeriesOf(prometheus::Registry& registry,
                                                const std::string& name) {
  std::vector<std::pair<Labels, double>> series;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      Labels labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      series.emplace_back(std::move(labels), family.type == prometheus::MetricType::Histogram
                                                 ? static_cast<double>(m.histogram.sample_count)
                                                 : m.counter.value);
    }
  }
  return series;
}

HangRecord ThreadHang(const std::string& role, uint64_t duration_ms) {
  HangRecord h;
  h.pid = 7;
  h.tid = role == "main" ? 7 : 8;
  h.thread_role = role;
  h.process = "/usr/bin/app";
  h.host = "web-1";
  h.labels = {{"build", "7"}};
  h.hang_class = HangClass::kBusy;
  h.duration_ms = duration_ms;
  return h;
}

// `n` passes of `ms` each.
PassHistogram Passes(uint64_t n, uint64_t ms) {
  PassHistogram passes;
  for (uint64_t i = 0; i < n; ++i) passes.Add(ms * 1'000'000);
  return passes;
}

void AddLag(HangMetrics& metrics, const std::string& role, const PassHistogram& passes,
            const Labels& labels = {{"build", "7"}}) {
  metrics.AddLag("app", "web-1", labels, 0, 60'000, passes, role);
}

// Records of the main thread and of a render thread: the render thread's hangs and passes are
// series of their own with role="render"; main's have no role label, and its passes are never
// added to render's (nor the other way round).
TEST(PrometheusRoleTest, ThreadsOtherThanMainGetARoleLabelAndLagSeriesOfTheirOwn) {
  prometheus::Registry registry;
  HangMetrics metrics(registry, {});
  metrics.AddHang(ThreadHang("main", 200), "");
  metrics.AddHang(ThreadHang("render", 60), "");
  metrics.AddHang(ThreadHang("render", 70), "");
  AddLag(metrics, "main", Passes(1000, 1));
  AddLag(metrics, "render", Passes(100, 30));
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 3);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "render"}}), 2);
  EXPECT_DOUBLE_EQ(Value(registry, "hangwatch_hang_seconds_total", {{"role", "render"}}), 0.13);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total", {{"role", "render"}}), 100);
  EXPECT_EQ(Value(registry, "hangwatch_pass_duration_seconds", {{"role", "render"}}), 100);
  EXPECT_EQ(Value(registry, "hangwatch_watched_seconds_total", {{"role", "render"}}), 60);
  for (const char* name : {"hangwatch_passes_total", "hangwatch_pass_duration_seconds"}) {
    const auto series = SeriesOf(registry, name);
    ASSERT_EQ(series.size(), 2u) << name;  // one per thread, never summed
    for (const auto& [labels, value] : series) {
      const auto role = labels.find("role");
      const bool render = role != labels.end();
      if (render) {
        EXPECT_EQ(role->second, "render");
      }
      EXPECT_EQ(labels.at("build"), "7");
      EXPECT_EQ(value, render ? 100 : 1000) << name;
    }
  }
}

// A main thread's series are what they were before roles: a render thread's records beside them
// (even with a deployment label named role, which stays role on main's series) change none of
// their lines, and records of an agent that knows roles ("main") read as those of one that did
// not ("").
TEST(PrometheusRoleTest, MainThreadSeriesAreWhatTheyWere) {
  const auto text = [](const std::string& main_role, bool with_render) {
    prometheus::Registry registry;
    HangMetrics metrics(registry, {});
    const Labels labels = {{"build", "7"}, {"role", "frontend"}};
    HangRecord hang = ThreadHang(main_role, 200);
    hang.labels = labels;
    metrics.AddHang(hang, "sleep");
    AddLag(metrics, main_role, Passes(10, 3), labels);
    if (with_render) {
      HangRecord render = ThreadHang("render", 80);
      render.labels = labels;
      metrics.AddHang(render, "sleep");
      AddLag(metrics, "render", Passes(20, 3), labels);
    }
    // Without the render thread's lines.
    std::string kept;
    std::istringstream lines(prometheus::TextSerializer().Serialize(registry.Collect()));
    for (std::string line; std::getline(lines, line);) {
      if (line.find("role=\"render\"") == std::string::npos) kept += line + "\n";
    }
    return kept;
  };
  const std::string main_only = text("", false);
  EXPECT_EQ(text("main", true), main_only);
  EXPECT_EQ(text("", true), main_only);
  EXPECT_NE(main_only.find("role=\"frontend\""), std::string::npos);
  EXPECT_EQ(main_only.find("label_role"), std::string::npos);
}

// At most max_roles roles get a value of their own, in the order they come; later ones "other".
TEST(PrometheusRoleTest, RolesAreBoundedAndLaterOnesReadOther) {
  prometheus::Registry registry;
  HangMetricsOptions options;
  options.max_roles = 2;
  HangMetrics metrics(registry, options);
  for (const char* role : {"render", "io", "gc", "audio", "io"}) {
    metrics.AddHang(ThreadHang(role, 90), "");
  }
  AddLag(metrics, "decoder", Passes(5, 1));
  metrics.AddHang(ThreadHang("main", 90), "");
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "render"}}), 1);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "io"}}), 2);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "other"}}), 2);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total", {{"role", "gc"}}), 0);
  EXPECT_EQ(Value(registry, "hangwatch_passes_total", {{"role", "other"}}), 5);
  EXPECT_EQ(Value(registry, "hangwatch_hangs_total"), 6);  // main's too: it takes no role slot
  std::set<std::string> roles;
  for (const auto& [labels, value] : SeriesOf(registry, "hangwatch_hangs_total")) {
    if (labels.count("role") != 0) roles.insert(labels.at("role"));
  }
  EXPECT_EQ(roles, (std::set<std::string>{"io", "other", "render"}));
  // The default: 16.
  EXPECT_EQ(HangMetricsOptions().max_roles, 16u);
}

// The agent of this process, through RegisterMetrics: a render thread's hang and lag records are
// series with role="render" (the main thread does no pass: it has no hang), and a deployment
// label named role is label_role on them.
TEST(PrometheusRoleTest, RegisterMetricsLabelsAWatchedThreadsHangsAndLagWithItsRole) {
  // The callbacks stay registered for the rest of the process: the registry too.
  static auto* registry = new prometheus::Registry;
  RegisterMetrics(*registry);
  Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.sample_interval = std::chrono::milliseconds(10);
  config.time_every_pass = true;
  config.lag_interval = std::chrono::milliseconds(200);
  config.log_hangs = false;
  config.labels["role"] = "frontend";
  ASSERT_TRUE(Start(config).ok());
  std::atomic<bool> done{false};
  std::thread render([&] {
    ThreadWatch watch = WatchThread("render");
    ASSERT_TRUE(watch.watching());
    // A slow frame between short ones until the metric shows a hang (the first slow frame may
    // come before the watchdog follows this thread).
    while (!done.load()) {
      for (int frame = 0; frame < 20 && !done.load(); ++frame) {
        Heartbeat();
        HANGWATCH_BUSY_WAIT_MS(2);
      }
      Heartbeat();
      HANGWATCH_BUSY_WAIT_MS(250);
    }
    watch.Pause();
  });
  const Labels render_labels = {{"role", "render"}, {"label_role", "frontend"}};
  const bool seen = testing::WaitFor([&] {
    return Value(*registry, "hangwatch_hangs_total", render_labels) >= 1 &&
           Value(*registry, "hangwatch_passes_total", render_labels) > 0;
  });
  done = true;
  render.join();
  Stop();
  ASSERT_TRUE(seen) << prometheus::TextSerializer().Serialize(registry->Collect());
  EXPECT_GE(Value(*registry, "hangwatch_hang_seconds_total", render_labels), 0.1);
  EXPECT_EQ(Value(*registry, "hangwatch_hangs_total"),
            Value(*registry, "hangwatch_hangs_total", {{"role", "render"}}));
  // Every series either is render's or has no role (main's lag records), never role="main".
  for (const auto& [labels, value] : SeriesOf(*registry, "hangwatch_passes_total")) {
    const auto role = labels.find("role");
    if (role != labels.end()) {
      EXPECT_EQ(role->second, "render");
    }
  }
}

}  // namespace
}  // namespace hangwatch
