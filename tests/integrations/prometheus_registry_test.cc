// hangwatch::RegisterMetrics (integrations/prometheus/): a program that embeds the agent
// (prometheus_embed_program.cc) serves the metrics from its own registry, scraped by Debian's
// prometheus (real_component); the figures Prometheus gives back must be those of the records
// the same agent wrote to its report.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hangwatch/pass_histogram.h"
#include "hangwatch_prometheus_metrics.h"
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
