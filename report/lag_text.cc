// DescribeLag (report_record.h).
#include <cstdio>
#include <string>

#include "report/report_record.h"

namespace hangwatch::report {

std::string DescribeLag(const LagFigures& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%llu passes (busy %.1f s), p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.1f ms",
                static_cast<unsigned long long>(f.passes), f.busy_ms / 1000, f.p50_ms, f.p95_ms,
                f.p99_ms, f.max_ms);
  std::string out = buf;
  bool first = true;
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    if (f.slow_passes[t] == 0) continue;
    std::snprintf(buf, sizeof buf, "%s%llu > %d ms", first ? "; slow: " : ", ",
                  static_cast<unsigned long long>(f.slow_passes[t]), kSlowPassThresholdsMs[t]);
    out += buf;
    first = false;
  }
  return out;
}

void AddLag(Lag* into, const Lag& from) {
  if (into->queued_passes > 0 || from.queued_passes > 0) {
    if (into->queued_passes == 0) into->delay = into->passes;
    into->delay.Merge(DelayOf(from));
  }
  into->passes.Merge(from.passes);
  into->queued_passes += from.queued_passes;
  into->queued_passes_lost += from.queued_passes_lost;
}

std::string DescribeDelay(const LagFigures& f, uint64_t queued, uint64_t lost) {
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "queued + running (%llu pass%s had waited): p50 %.2f ms, p95 %.2f ms, p99 %.2f "
                "ms, max %.1f ms",
                static_cast<unsigned long long>(queued), queued == 1 ? "" : "es", f.p50_ms,
                f.p95_ms, f.p99_ms, f.max_ms);
  std::string out = buf;
  if (lost > 0) {
    out += "; " + std::to_string(lost) +
           " more that had waited were counted at their own time (the agent read them too late)";
  }
  return out;
}

}  // namespace hangwatch::report
