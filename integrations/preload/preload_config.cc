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
  if (const char* v = getenv("HANGWATCH_MAX_FRAMES"); v != nullptr && *v != '\0') {
    if (!ParseMs(v, 1, 1024, &c.max_frames)) {
      warnings->push_back(std::string("HANGWATCH_MAX_FRAMES='") + v +
                          "' is not a number of frames in [1, 1024]; using the default");
    }
  }
  ms("HANGWATCH_LAG_INTERVAL_MS", 0, &c.lag_interval_ms);
  flag("HANGWATCH_LOG", &c.log);
  flag("HANGWATCH_LOG_LAG", &c.log_lag);
  flag("HANGWATCH_STARTUP_STALL", &c.startup_stall);
  flag("HANGWATCH_INHERIT", &c.inherit);
  flag("HANGWATCH_TIME_PASSES", &c.time_passes);
  if (const char* v = getenv("HANGWATCH_REPORT")) c.report_path = v;
  if (const char* v = getenv("HANGWATCH_OPEN_HANG_DIR")) c.open_hang_dir = v;
  if (const char* v = getenv("HANGWATCH_THREADS"); v != nullptr && *v != '\0') {
    std::string error;
    if (!ParseThreadSelection(v, &c.threads, &error)) {
      std::string shown = v;  // printed on a terminal: no control characters
      for (char& ch : shown) {
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
      }
      warnings->push_back("HANGWATCH_THREADS='" + shown + "' " + error +
                          "; watching the main thread only");
      c.threads = ThreadSelection{};
    }
  }
  return c;
}

PreloadConfig SecureExecutionConfig() {
  PreloadConfig c;
  c.log = false;
  c.startup_stall = false;
  return c;
}

}  // namespace hangwatch::preload
