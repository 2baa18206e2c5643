#include "hangwatch_prometheus.h"

#include <memory>

#include "hangwatch/hangwatch.h"

namespace hangwatch {

void RegisterMetrics(prometheus::Registry& registry, const HangMetricsOptions& options) {
  // Owned by the callbacks, which the agent keeps for the rest of the process.
  auto metrics = std::make_shared<HangMetrics>(registry, options);
  // The cause label is the cause's kind in JSON, as `hangwatch exporter` reads it from the
  // report ("" without a cause: "unknown").
  // Both carry their thread's role (hangwatch/threads.h): a thread other than main gets a `role`
  // label, and its lag records series of their own.
  AddHangCallback([metrics](const HangRecord& hang) {
    metrics->AddHang(hang, CauseKindName(hang.cause.kind));
  });
  AddLagCallback([metrics](const LagRecord& lag) {
    metrics->AddLag(lag.process_name, lag.host, lag.labels, lag.start_unix_ms, lag.end_unix_ms,
                    lag.passes, lag.thread_role, lag.queued_passes > 0 ? &lag.delay : nullptr);
  });
}

}  // namespace hangwatch
