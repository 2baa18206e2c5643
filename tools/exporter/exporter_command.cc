// `hangwatch exporter --listen ADDR:PORT FILE...`: hang and lag metrics of JSON Lines reports,
// followed as they grow (tools/reader/report_follower.h), served on /metrics by prometheus-cpp
// (hangwatch_prometheus_metrics.h).
#include <signal.h>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "hangwatch_prometheus_metrics.h"
#include "tools/common/flag_parser.h"
#include "tools/exporter/exporter_command.h"
#include "tools/exporter/process_metrics.h"
#include "tools/exporter/record_counter.h"
#include "tools/reader/report_follower.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch exporter --listen ADDR:PORT [options] FILE...\n"
    "\n"
    "Serves the hangs and run-loop pass durations of JSON Lines reports as Prometheus metrics\n"
    "on http://ADDR:PORT/metrics. Each FILE is a path or a glob pattern (quote it: files that\n"
    "appear later are followed too); files are read from their start, then followed as they\n"
    "grow, across rotation (PATH renamed to PATH.1) and truncation.\n"
    "\n"
    "Metrics, labelled process and host plus the records' labels (HANGWATCH_LABELS):\n"
    "  hangwatch_hangs_total{class,cause}, hangwatch_hang_seconds_total{class},\n"
    "  hangwatch_fatal_hangs_total, hangwatch_pass_duration_seconds (histogram),\n"
    "  hangwatch_pass_delay_seconds (histogram: queued + running),\n"
    "  hangwatch_passes_total, hangwatch_busy_seconds_total,\n"
    "  hangwatch_exporter_lines_skipped_total{reason}, process_*.\n"
    "Hang rate in seconds per hour: 3600 * rate(hangwatch_hang_seconds_total[1h]).\n"
    "\n"
    "  --listen ADDR:PORT   where to serve (port 0: any free port, printed on stderr)\n"
    "  --culprit-top N      label hangs by culprit for the N culprits with the most hangs\n"
    "                       (others: culprit=\"other\"); default 0: no culprit label\n"
    "  --context-top N      label hangs by context (what the pass was serving: the innermost\n"
    "                       label, else the source, else the trigger's kind; as `hangwatch top\n"
    "                       --by context`) for the N contexts with the most hangs (others:\n"
    "                       context=\"other\", none: \"none\"); default 0: no context label\n"
    "  --max-roles N        thread roles with a role label of their own (default 16; later\n"
    "                       ones: role=\"other\"); the main thread's series have no role label\n"
    "  --max-series N       distinct label sets at most (default 10000); records beyond are\n"
    "                       counted as skipped (reason series_limit)\n"
    "  --poll-ms N          how often the files are read (default 250)\n"
    "\n"
    "Torn lines, unknown record types, other format versions and unreadable files are counted\n"
    "in hangwatch_exporter_lines_skipped_total and never stop the exporter. Runs until SIGINT or\n"
    "SIGTERM (exit 0); a bad flag or an address it cannot listen on: one line, exit 2.\n";

// "ADDR:PORT" with a port from 0 to 65535 and a non-empty address.
std::string CheckListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  uint64_t port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !ParseWholeNumber(std::string_view(listen).substr(colon + 1), 0, 65535, &port)) {
    return "--listen wants ADDR:PORT (e.g. 127.0.0.1:9464), not '" + listen + "'";
  }
  return "";
}

int Run(int argc, char** argv) {
  FlagParser flags("hangwatch exporter");
  flags.Help({kUsage});
  std::string listen;
  HangMetricsOptions options;
  uint64_t poll_ms = 250;
  flags.Value({"--listen"}, [&](const std::string& v) {
    listen = v;
    return CheckListen(v);
  });
  flags.Number({"--culprit-top"}, 0, 1000, &options.culprit_top);
  flags.Number({"--context-top"}, 0, 1000, &options.context_top);
  flags.Number({"--max-roles"}, 0, 1000, &options.max_roles);
  flags.Number({"--max-series"}, 1, 10'000'000, &options.max_label_sets);
  flags.Number({"--poll-ms"}, 1, 60'000, &poll_ms);
  if (auto done = flags.Parse(argc, argv)) return *done;
  if (listen.empty()) return flags.Fail("--listen ADDR:PORT is required");
  if (flags.positional().empty()) return flags.Fail("no report FILE given");

  // The signals that stop it are taken by sigtimedwait below, in this thread only: blocked
  // before the server's threads start, so that they inherit the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto registry = std::make_shared<prometheus::Registry>();
  auto process = std::make_shared<ProcessMetrics>();
  HangMetrics metrics(*registry, options);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen, 2);
  } catch (const std::exception& e) {
    return flags.Fail("cannot listen on " + listen + " (address in use or not local?)");
  }
  exposer->RegisterCollectable(registry);
  exposer->RegisterCollectable(process);
  const std::vector<int> ports = exposer->GetListeningPorts();
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::fprintf(stderr, "hangwatch exporter: serving http://%s:%d/metrics\n", host.c_str(),
               ports.empty() ? 0 : ports.front());

  ReportFollower tail(flags.positional());
  RecordCounter counter(&metrics);
  const auto on_line = [&](std::string_view line) { counter.Count(line); };
  const auto on_skip = [&](ReportFollower::Event event) { metrics.Skip(SkipReason(event)); };
  const timespec wait = {static_cast<time_t>(poll_ms / 1000),
                         static_cast<long>(poll_ms % 1000) * 1'000'000};
  for (;;) {
    tail.Poll(on_line, on_skip);
    const int sig = sigtimedwait(&stop, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) break;
  }
  tail.Poll(on_line, on_skip);
  return 0;
}

}  // namespace

const Command kExporterCommand = {
    "exporter", "serve the hangs and lag of reports as Prometheus metrics (/metrics)", Run};

}  // namespace hangwatch::tools
