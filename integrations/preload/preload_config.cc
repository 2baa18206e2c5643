#include "integrations/preload/preload_config.h"

#include <charconv>

namespace hangwatch::preload {
namespace {

bool ParseMs(std::string_view s, uint32_t min, uint32_t max, uint32_t* out) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < min || v > max) {
    return false;
  }
  *out = v;
  return true;
}

bool ParseBool(std::string_view s, bool* out) {
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
  } else if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// Calls fn(entry) for each entry of an LD_PRELOAD list (separated by ':' or spaces, as ld.so
// reads it).
template <typename Fn>
void ForEachPreloadEntry(std::string_view list, Fn fn) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && (list[i] == ':' || list[i] == ' ')) ++i;
    size_t j = i;
    while (j < list.size() && list[j] != ':' && list[j] != ' ') ++j;
    if (j == i) break;
    fn(list.substr(i, j - i));
    i = j;
  }
}

bool IsShimEntry(std::string_view entry, std::string_view self_path) {
  const size_t slash = entry.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? entry : entry.substr(slash + 1);
  return (!self_path.empty() && entry == self_path) || name.substr(0, 20) == "libhangwatch_preload";
}

}  // namespace

PreloadConfig ReadPreloadConfig(const EnvLookup& getenv, std::vector<std::string>* warnings) {
  PreloadConfig c;
  auto ms = [&](const char* name, uint32_t min, uint32_t* dst) {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return;
    if (!ParseMs(v, min, 3600 * 1000, dst)) {
      warnings->push_back(std::string(name) + "='" + v + "' is not a number of milliseconds in [" +
                          std::to_string(min) + ", 3600000]; using " + std::to_string(*dst));
    }
  };
  auto flag = [&](const char* name, bool* dst) {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return;
    if (!ParseBool(v, dst)) {
      warnings->push_back(std::string(name) + "='" + v + "' is not 0 or 1; using " +
                          (*dst ? "1" : "0"));
    }
  };
  ms("HANGWATCH_THRESHOLD_MS", 1, &c.threshold_ms);
  ms("HANGWATCH_SAMPLE_MS", 1, &c.sample_ms);
  if (c.sample_ms > c.threshold_ms) {
    warnings->push_back("HANGWATCH_SAMPLE_MS is larger than HANGWATCH_THRESHOLD_MS; using " +
                        std::to_string(c.threshold_ms));
    c.sample_ms = c.threshold_ms;
  }
  ms("HANGWATCH_STARTUP_MS", 1, &c.startup_ms);
  ms("HANGWATCH_LAG_INTERVAL_MS", 0, &c.lag_interval_ms);
  flag("HANGWATCH_LOG", &c.log);
  flag("HANGWATCH_LOG_LAG", &c.log_lag);
  flag("HANGWATCH_STARTUP_STALL", &c.startup_stall);
  flag("HANGWATCH_INHERIT", &c.inherit);
  flag("HANGWATCH_TIME_PASSES", &c.time_passes);
  if (const char* v = getenv("HANGWATCH_REPORT")) c.report_path = v;
  if (const char* v = getenv("HANGWATCH_OPEN_HANG_DIR")) c.open_hang_dir = v;
  return c;
}

PreloadConfig SecureExecutionConfig() {
  PreloadConfig c;
  c.log = false;
  c.startup_stall = false;
  return c;
}

size_t RemoveShimFromPreload(std::string_view list, std::string_view self_path, char* out) {
  size_t n = 0;
  ForEachPreloadEntry(list, [&](std::string_view entry) {
    if (IsShimEntry(entry, self_path)) return;
    if (n > 0) out[n++] = ':';
    for (char c : entry) out[n++] = c;
  });
  out[n] = '\0';
  return n;
}

bool HasShim(std::string_view list, std::string_view self_path) {
  bool found = false;
  ForEachPreloadEntry(list,
                      [&](std::string_view entry) { found |= IsShimEntry(entry, self_path); });
  return found;
}

}  // namespace hangwatch::preload
