// hangwatch::RegisterMetrics: the hangwatch metrics (docs/prometheus/README.md) in an
// application's own prometheus-cpp registry, fed live by its in-process agent: no report files,
// no exporter. The same metrics, names, labels and buckets as `hangwatch exporter` serves
// (hangwatch_prometheus_metrics.h computes both).
//
//   auto registry = std::make_shared<prometheus::Registry>();
//   hangwatch::RegisterMetrics(*registry);
//   exposer.RegisterCollectable(registry);
//   hangwatch::Config config;
//   config.time_every_pass = true;  // for the lag metrics (histogram, passes, watched time)
//   hangwatch::Start(config);
//
// Hangs come from hangwatch::AddHangCallback, lag records from hangwatch::AddLagCallback: both
// run on the agent's watchdog thread, stay registered across Stop()/Start() and for the rest of
// the process. Call hangwatch::Stop() before the registry is destroyed (Stop() hands over the
// last lag record).
#ifndef HANGWATCH_INTEGRATIONS_PROMETHEUS_H_
#define HANGWATCH_INTEGRATIONS_PROMETHEUS_H_

#include <prometheus/registry.h>

#include "hangwatch_prometheus_metrics.h"

namespace hangwatch {

// Adds the metric families to `registry` and registers the callbacks that fill them.
// `options`: the culprit and context labels (off by default), the number of thread roles with a
// `role` value of their own (max_roles: 16) and the label-set limit, as the exporter's flags.
void RegisterMetrics(prometheus::Registry& registry, const HangMetricsOptions& options = {});

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_PROMETHEUS_H_
