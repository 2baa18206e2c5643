// `hangwatch exporter` scraped by Debian's prometheus (real_component): reports with known hangs
// and lag records, some appended after the exporter started, one file rotated to .1 and one
// appearing later through a glob; then Prometheus's HTTP API must give back the hangs written,
// the lag records' p99 (within one histogram bucket) and the hang rate per watched hour.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hangwatch/pass_histogram.h"
#include "hangwatch_prometheus_metrics.h"
#include "report/report_record.h"
#include "tests/prometheus_server.h"
#include "tests/tools/cli_util.h"

namespace hangwatch::tools {
namespace {

using hangwatch::testing::Child;
using hangwatch::testing::kPrometheus;
using hangwatch::testing::PrometheusServer;
using hangwatch::testing::ReadFile;
using hangwatch::testing::TempDir;
using hangwatch::testing::WaitFor;

void Append(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "a");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

class ExporterPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) {
      GTEST_SKIP() << kPrometheus << " is missing (Debian: prometheus; scripts/bootstrap.sh)";
    }
  }

  // A hang record line of `process` lasting `ms`.
  std::string HangLine(const std::string& process, uint64_t ms, bool fatal = false) {
    HangRecord h;
    h.pid = 100;
    h.tid = 100;
    h.process = "/usr/bin/" + process;
    h.process_name = process;
    h.host = "host-1";
    h.start_unix_ms = 1763700000000;
    h.duration_ms = ms;
    h.cpu_ms = ms;
    h.hang_class = HangClass::kBusy;
    h.fatal = fatal;
    ++hangs_;
    hang_ms_ += ms;
    return report::Encode(h) + "\n";
  }

  // A lag record line of `process` over 60 s: `fast` passes of 2 ms, `slow` of `slow_ms`.
  std::string LagLine(const std::string& process, uint64_t fast, uint64_t slow, uint64_t slow_ms) {
    report::Lag lag;
    lag.pid = 100;
    lag.process_name = process;
    lag.host = "host-1";
    lag.start_unix_ms = 1763700000000;
    lag.end_unix_ms = lag.start_unix_ms + 60'000;
    for (uint64_t i = 0; i < fast; ++i) lag.passes.Add(2'000'000);
    for (uint64_t i = 0; i < slow; ++i) lag.passes.Add(slow_ms * 1'000'000);
    for (uint64_t i = 0; i < fast; ++i) {
      all_passes_.Add(2'000'000);
      lag.passes.AddBusyNs(2'000'000);
    }
    for (uint64_t i = 0; i < slow; ++i) all_passes_.Add(slow_ms * 1'000'000);
    watched_s_ += 60;
    return report::Encode(lag) + "\n";
  }

  TempDir dir_;
  uint64_t hangs_ = 0, hang_ms_ = 0, watched_s_ = 0;
  PassHistogram all_passes_;
};

// The index of the histogram bucket holding `seconds` (PassDurationBuckets; size() for +Inf).
size_t BucketIndex(double seconds) {
  const auto& b = PassDurationBuckets();
  return static_cast<size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin());
}

TEST_F(ExporterPrometheusTest, PrometheusGetsTheHangsTheP99AndTheHangRateWritten) {
  const std::string a = dir_ / "a.jsonl";
  Append(a, LagLine("api", 1000, 5, 40));
  Append(a, HangLine("api", 1500));
  Append(a, HangLine("api", 700));

  const std::string exporter_log = dir_ / "exporter.log";
  Child exporter({HANGWATCH_CLI, "exporter", "--listen", "127.0.0.1:0", "--poll-ms", "100", a,
                  dir_ / "later-*.jsonl"},
                 exporter_log);
  int exporter_port = 0;
  ASSERT_TRUE(WaitFor([&] {
    const std::string log = ReadFile(exporter_log);
    const size_t at = log.find("serving http://127.0.0.1:");
    if (at == std::string::npos) return false;
    exporter_port = std::atoi(log.c_str() + at + 25);
    return exporter_port > 0;
  })) << ReadFile(exporter_log);

  const PrometheusServer prometheus(dir_.path(), {"127.0.0.1:" + std::to_string(exporter_port)},
                                    {RULES_FILE});
  const auto Query = [&](const std::string& expr) { return prometheus.Query(expr); };
  // Prometheus has scraped the exporter once it knows the records written before the start.
  ASSERT_TRUE(WaitFor([&] { return Query("sum(hangwatch_hangs_total)") == 2.0; }))
      << prometheus.Log();

  // After the start: appends (one line torn by a writer that died), a rotation to .1 with a
  // line the writer still appended to the old file, the new file, and a file a glob finds.
  Append(a, HangLine("api", 300));
  Append(a, LagLine("api", 2000, 40, 120));
  Append(a, "{\"type\":\"hang\",\"pid\":1,\"ti\n");
  ASSERT_EQ(rename(a.c_str(), (a + ".1").c_str()), 0);
  Append(a + ".1", HangLine("api", 250));
  Append(a, HangLine("api", 900));
  Append(a, LagLine("api", 500, 0, 0));
  const std::string later = dir_ / "later-worker.jsonl";
  Append(later, LagLine("worker", 300, 10, 600));
  Append(later, HangLine("worker", 2000, /*fatal=*/true));
  Append(later, "{\"type\":\"gc_pause\",\"format_version\":1}\n");

  std::optional<double> hangs;
  EXPECT_TRUE(WaitFor([&] { return (hangs = Query("sum(hangwatch_hangs_total)")) == 6.0; }))
      << ReadFile(exporter_log);
  ASSERT_EQ(hangs_, 6u);
  EXPECT_EQ(hangs, 6.0);
  EXPECT_TRUE(WaitFor([&] { return Query("sum(hangwatch_fatal_hangs_total)") == 1.0; }));
  EXPECT_TRUE(WaitFor([&] {
    return Query("sum(hangwatch_passes_total)") == static_cast<double>(all_passes_.passes());
  }));
  EXPECT_EQ(Query("sum(hangwatch_exporter_lines_skipped_total{reason=\"torn\"})"), 1.0);
  EXPECT_EQ(Query("sum(hangwatch_exporter_lines_skipped_total{reason=\"unknown_type\"})"), 1.0);
  EXPECT_EQ(Query("count(hangwatch_hangs_total{process=\"worker\",host=\"host-1\"})"), 4.0);

  // p99 of every pass written: within one bucket of what the lag records say.
  const double want_p99 = all_passes_.Figures().p99_ms / 1000.0;
  const auto p99 =
      Query("histogram_quantile(0.99, sum by (le) (hangwatch_pass_duration_seconds_bucket))");
  ASSERT_TRUE(p99.has_value());
  const long apart =
      static_cast<long>(BucketIndex(*p99)) - static_cast<long>(BucketIndex(want_p99));
  EXPECT_LE(std::labs(apart), 1) << "p99 " << *p99 << " s, lag records' p99 " << want_p99 << " s";

  // Hang rate, seconds of hang per hour watched.
  const double want_rate =
      3600.0 * (static_cast<double>(hang_ms_) / 1000.0) / static_cast<double>(watched_s_);
  const auto rate =
      Query("3600 * sum(hangwatch_hang_seconds_total) / sum(hangwatch_watched_seconds_total)");
  ASSERT_TRUE(rate.has_value());
  EXPECT_NEAR(*rate, want_rate, want_rate * 1e-9)
      << "hang ms " << hang_ms_ << ", watched s " << watched_s_;
  // The wall-clock form is a rate of the same counter: positive once hangs grew.
  const auto wall = Query("3600 * sum(rate(hangwatch_hang_seconds_total[1h]))");
  ASSERT_TRUE(wall.has_value());
  EXPECT_GT(*wall, 0.0);

  // The recording rules of docs/prometheus/ evaluate over what the exporter serves.
  EXPECT_TRUE(WaitFor([&] {
    return Query("count(hangwatch:pass_duration_seconds:p99_5m{process=\"api\"} > 0)") == 1.0;
  })) << prometheus.Log();
  EXPECT_TRUE(WaitFor([&] {
    return Query("count(hangwatch:hang_seconds_per_hour:rate1h{process=\"api\"} > 0)") == 1.0;
  }));

  EXPECT_EQ(exporter.Stop(SIGTERM), 0) << ReadFile(exporter_log);
}

TEST(ExporterCommandTest, APortInUseOrABadFlagIsOneLineAndExit2) {
  TempDir dir;
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 1), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string busy = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto r = hangwatch::testing::RunCommand(
      {HANGWATCH_CLI, "exporter", "--listen", busy, dir / "r.jsonl"});
  close(s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on " + busy), std::string::npos) << r.err;

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--listen", "nocolon", "r.jsonl"},
           {"--listen", "127.0.0.1:70000", "r.jsonl"},
           {"--listen", "127.0.0.1:0"},
           {"r.jsonl"},
           {"--listen", "127.0.0.1:0", "--culprit-top", "x", "r.jsonl"},
           {"--listen", "127.0.0.1:0", "--frobnicate", "r.jsonl"}}) {
    std::vector<std::string> argv = {HANGWATCH_CLI, "exporter"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    r = hangwatch::testing::RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << bad[0];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace hangwatch::tools
