// The usual process metrics of a Prometheus exporter (process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes, process_start_time_seconds,
// process_open_fds, process_max_fds), read from /proc/self at each scrape: prometheus-cpp does
// not provide them.
#ifndef HANGWATCH_TOOLS_EXPORTER_PROCESS_METRICS_H_
#define HANGWATCH_TOOLS_EXPORTER_PROCESS_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace hangwatch::tools {

class ProcessMetrics final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_PROCESS_METRICS_H_
