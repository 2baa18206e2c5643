#include "hangwatch_prometheus.h"

#include <memory>

#include "hangwatch/hangwatch.h"

namespace hangwatch {

void RegisterMetrics(prometheus::Registry& registry, const HangMetricsOptions& options) {
  // Owned by the callbacks, which the agent keeps for the rest of the process.
  auto metrics = std::make_shared<HangMetrics>(registry, options);
  // A hang record has no cause yet: "unknown" (the exporter reads a report's cause.kind).
  AddHangCallback([metrics](const HangRecord& hang) { metrics->AddHang(hang, ""); });
  AddLagCallback([metrics](const LagRecord& lag) {
    metrics->AddLag(lag.process_name, lag.host, lag.labels, lag.start_unix_ms, lag.end_unix_ms,
                    lag.passes);
  });
}

}  // namespace hangwatch
