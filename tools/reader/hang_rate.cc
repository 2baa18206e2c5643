#include "tools/reader/hang_rate.h"

#include <cstdio>
#include <set>
#include <utility>

namespace hangwatch::tools {

HangRate HangRateOf(const std::vector<HangRecord>& hangs, const std::vector<report::Lag>& lags,
                    std::string_view role) {
  HangRate rate;
  std::set<std::pair<std::string, int64_t>> watched;  // host, pid
  for (const report::Lag& l : lags) {
    if (report::RoleOrMain(l.thread_role) != report::RoleOrMain(role)) continue;
    if (l.end_unix_ms > l.start_unix_ms) {
      rate.watched_ms += static_cast<uint64_t>(l.end_unix_ms - l.start_unix_ms);
    }
    watched.emplace(l.host, l.pid);
  }
  for (const HangRecord& h : hangs) {
    if (report::RoleOrMain(h.thread_role) != report::RoleOrMain(role)) continue;
    if (watched.count({h.host, h.pid}) == 0) continue;
    rate.hang_ms += h.duration_ms;
    ++rate.hangs;
  }
  return rate;
}

std::string DescribeHangRate(const HangRate& rate) {
  if (!rate.known()) return "";
  const double watched_s = static_cast<double>(rate.watched_ms) / 1000.0;
  char watched[32];
  if (watched_s >= 7200) {
    std::snprintf(watched, sizeof watched, "%.1f h", watched_s / 3600);
  } else if (watched_s >= 120) {
    std::snprintf(watched, sizeof watched, "%.1f min", watched_s / 60);
  } else {
    std::snprintf(watched, sizeof watched, "%.1f s", watched_s);
  }
  char out[160];
  std::snprintf(out, sizeof out, "hang rate %.1f s/h (%.1f s of hang in %s watched)",
                rate.seconds_per_hour(), static_cast<double>(rate.hang_ms) / 1000.0, watched);
  return out;
}

}  // namespace hangwatch::tools
