// FormatTopText and FormatTopJson.
#include "tools/top/top_output.h"

#include <cinttypes>
#include <cstdio>

#include "nlohmann/json.hpp"
#include "report/names.h"
#include "report/stack_identity.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/report_frames.h"

namespace hangwatch::tools {
namespace {

std::string ByName(TopBy by, const std::string& label) {
  switch (by) {
    case TopBy::kLabel:
      return "label:" + label;
    case TopBy::kFingerprint:
      return "fingerprint";
    case TopBy::kCulprit:
      return "culprit";
    case TopBy::kCause:
      return "cause";
    case TopBy::kThread:
      return "thread";
    case TopBy::kContext:
      return "context";
    case TopBy::kSignature:
      break;
  }
  return "signature";
}

// "debugCommand (debug.c:1033)", "python3.11+0x5d64b4", "(no stack)", at most `width` bytes:
// a long name is cut, the file:line kept.
std::string CulpritText(const TopGroup& g, size_t width) {
  if (!g.culprit) return "(no stack)";
  const TopCulprit& c = *g.culprit;
  const Culprit culprit = c.AsCulprit();
  std::string name = CulpritLabel(culprit, CulpritLabelStyle::kFunction);
  // What kBaseFileLine adds to the function, " (debug.c:1033)": kept whole when the name is cut.
  std::string where = CulpritLabel(culprit, CulpritLabelStyle::kBaseFileLine).substr(name.size());
  if (where.size() + 12 > width) where = "";
  if (name.size() + where.size() > width) name = name.substr(0, width - where.size() - 2) + "..";
  return name + where;
}

std::string Cut(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 2) + "..";
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// The group's most common cause kind, "+N" when its hangs have N other kinds too; "-" when
// none has a cause.
std::string CauseText(const TopGroup& g) {
  std::string kinds;
  size_t others = 0;
  for (const auto& [kind, count] : g.causes) {
    if (kind.empty()) continue;
    if (kinds.empty()) {
      kinds = kind;
    } else {
      ++others;
    }
  }
  if (kinds.empty()) return "-";
  if (others > 0) kinds += "+" + std::to_string(others);
  return kinds;
}

}  // namespace

std::string FormatTopDuration(uint64_t ms) {
  char buf[32];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "ms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "m%02" PRIu64 "s", ms / 60'000, ms / 1000 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "h%02" PRIu64 "m", ms / 3'600'000, ms / 60'000 % 60);
  }
  return buf;
}

std::string FormatTopText(const std::vector<TopGroup>& groups, const TopTextOptions& o) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%" PRIu64 " hang%s in %zu group%s (by %s) from %zu file%s\n",
                o.hangs, o.hangs == 1 ? "" : "s", groups.size(), groups.size() == 1 ? "" : "s",
                ByName(o.by, o.by_label).c_str(), o.files, o.files == 1 ? "" : "s");
  out += buf;
  std::snprintf(buf, sizeof buf, "%" PRIu64 " host%s, %" PRIu64 " process%s", o.hosts_total,
                o.hosts_total == 1 ? "" : "s", o.processes_total,
                o.processes_total == 1 ? "" : "es");
  out += buf;
  out += o.watched_ms > 0 ? ", " + FormatTopDuration(o.watched_ms) +
                                " watched (lag records; S/H: seconds of hang per watched hour)\n"
                          : ", no lag records (no hang rate)\n";
  if (o.queued_passes > 0) {
    std::snprintf(buf, sizeof buf,
                  "longest input delay %.1f ms (queued + running, main thread; %" PRIu64
                  " pass%s had waited)\n",
                  o.delay_max_ms, o.queued_passes, o.queued_passes == 1 ? "" : "es");
    out += buf;
  }
  if (groups.empty()) return EscapeForTerminal(out);
  // A THREAD column (the role) when a group is not the main thread's (as before roles without).
  bool roles = false;
  for (const TopGroup& g : groups) roles |= g.role != "main";
  roles &= o.by != TopBy::kThread;
  std::snprintf(buf, sizeof buf,
                "%7s %9s %11s %7s %7s %7s %8s %7s %5s %5s  %-10s %-44s %-16s %s%s\n", "COUNT",
                "HOSTS", "PROCS", "P50", "P95", "MAX", "TOTAL", "S/H", "BUSY", "BLOCK", "CAUSE",
                "CULPRIT (FILE:LINE)", "PROCESS", roles ? "THREAD     " : "",
                ByName(o.by, o.by_label).c_str());
  out += buf;
  const size_t n = o.limit == 0 ? groups.size() : std::min(o.limit, groups.size());
  for (size_t i = 0; i < n; ++i) {
    const TopGroup& g = groups[i];
    std::string process = g.process_names.empty() ? "" : g.process_names[0].first;
    if (g.process_names.size() > 1) {
      process += " +" + std::to_string(g.process_names.size() - 1);
    }
    std::string key = g.key.empty() ? "-" : g.key;
    const std::string hosts = std::to_string(g.hosts) + "/" + std::to_string(o.hosts_total);
    const std::string procs = std::to_string(g.processes) + "/" + std::to_string(o.processes_total);
    char rate[32] = "-";
    if (g.hang_seconds_per_hour) std::snprintf(rate, sizeof rate, "%.1f", *g.hang_seconds_per_hour);
    std::snprintf(buf, sizeof buf,
                  "%7" PRIu64 " %9s %11s %7s %7s %7s %8s %7s %5" PRIu64 " %5" PRIu64
                  "  %-10s %-44s %-16s %s%s\n",
                  g.count, hosts.c_str(), procs.c_str(), FormatTopDuration(g.p50_ms).c_str(),
                  FormatTopDuration(g.p95_ms).c_str(), FormatTopDuration(g.max_ms).c_str(),
                  FormatTopDuration(g.total_ms).c_str(), rate, g.busy, g.blocked,
                  Cut(CauseText(g), 10).c_str(), CulpritText(g, 44).c_str(),
                  Cut(process, 16).c_str(), roles ? (Pad(Cut(g.role, 10), 10) + " ").c_str() : "",
                  Cut(key, 60).c_str());
    out += buf;
  }
  if (n < groups.size()) {
    out += "... " + std::to_string(groups.size() - n) + " more group" +
           (groups.size() - n == 1 ? "" : "s") + " (--limit 0 shows all)\n";
  }
  return EscapeForTerminal(out);
}

std::string FormatTopJson(const std::vector<TopGroup>& groups, TopBy by, size_t limit,
                          const std::string& by_label) {
  nlohmann::json out = nlohmann::json::array();
  const size_t n = limit == 0 ? groups.size() : std::min(limit, groups.size());
  for (size_t i = 0; i < n; ++i) {
    const TopGroup& g = groups[i];
    nlohmann::json j;
    j["by"] = ByName(by, by_label);
    j["key"] = g.key;
    if (g.role != "main") j["role"] = g.role;  // absent: the main thread's
    j["count"] = g.count;
    j["hosts"] = g.hosts;
    j["processes"] = g.processes;
    j["hang_seconds_per_hour"] =
        g.hang_seconds_per_hour ? nlohmann::json(*g.hang_seconds_per_hour) : nlohmann::json();
    nlohmann::json names = nlohmann::json::array();
    for (const auto& [name, count] : g.process_names) {
      names.push_back({{"name", name}, {"count", count}});
    }
    j["process_names"] = std::move(names);
    j["signature"] = g.signature;
    j["fingerprint"] = g.fingerprint;
    if (g.culprit) {
      j["culprit"] = {{"symbol", g.culprit->symbol},
                      {"module", g.culprit->module},
                      {"offset", Hex(g.culprit->offset)},
                      {"file", g.culprit->file},
                      {"line", g.culprit->line}};
      if (IsInterpreted(g.culprit->language)) {
        j["culprit"]["kind"] = FrameLanguageName(g.culprit->language);
      }
    } else {
      j["culprit"] = nullptr;
    }
    nlohmann::json causes = nlohmann::json::array();
    for (const auto& [kind, count] : g.causes) {
      causes.push_back({{"kind", kind.empty() ? nlohmann::json(nullptr) : nlohmann::json(kind)},
                        {"count", count}});
    }
    j["causes"] = std::move(causes);
    j["classes"] = {
        {"busy", g.busy}, {"blocked", g.blocked}, {"mixed", g.mixed}, {"unknown", g.unknown}};
    j["fatal"] = g.fatal;
    j["duration_ms"] = {
        {"p50", g.p50_ms}, {"p95", g.p95_ms}, {"max", g.max_ms}, {"total", g.total_ms}};
    j["cpu_ms"] = g.cpu_ms;
    j["first_unix_ms"] = g.first_unix_ms;
    j["last_unix_ms"] = g.last_unix_ms;
    nlohmann::json examples = nlohmann::json::array();
    for (const TopExample& e : g.examples) {
      examples.push_back({{"host", e.host},
                          {"pid", e.pid},
                          {"hang_id", e.hang_id},
                          {"start_unix_ms", e.start_unix_ms},
                          {"duration_ms", e.duration_ms}});
    }
    j["examples"] = std::move(examples);
    out.push_back(std::move(j));
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace hangwatch::tools
