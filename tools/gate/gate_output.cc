// Text, JSON, Markdown and GitHub annotations of a gate verdict (JUnit: gate_junit.cc).
#include <cstdio>
#include <string>

#include "nlohmann/json.hpp"
#include "report/cause_text.h"
#include "report/names.h"
#include "report/record_types.h"
#include "tools/common/terminal_text.h"
#include "tools/gate/gate_output.h"
#include "tools/reader/report_frames.h"

namespace hangwatch::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool IsMain(std::string_view role) { return report::RoleOrMain(role) == report::kMainRole; }

// The lag summaries of the verdict, main's first, each with its role's budgets (nullptr: none).
struct RoleLag {
  std::string role;
  const LagSummary* lag;
  const RoleBudgets* budgets;
};
std::vector<RoleLag> RoleLags(const GateVerdict& v) {
  std::vector<RoleLag> out;
  if (v.lag) out.push_back({std::string(report::kMainRole), &*v.lag, &v.budgets});
  for (const auto& [role, lag] : v.other_lags) {
    out.push_back({role, &lag, v.budgets.ForRole(role)});
  }
  return out;
}

std::string ProcessOf(const HangGroup& g) {
  if (g.longest == nullptr) return "";
  return std::string(report::ProcessName(g.longest->process_name, g.longest->process));
}

std::string AllowedText(const AllowEntry& e) {
  return "allowed (line " + std::to_string(e.line) + ": " + e.reason + ")";
}

// --- text ---

void TextGroups(const char* title, const std::vector<HangGroup>& groups, size_t max_listed,
                std::string* out) {
  if (groups.empty()) return;
  *out += std::string(title) + ": " + std::to_string(groups.size()) + "\n";
  size_t listed = 0;
  for (const HangGroup& g : groups) {
    if (listed++ == max_listed) {
      *out += "  ... and " + std::to_string(groups.size() - max_listed) + " more\n";
      break;
    }
    const std::string where = CulpritLocation(g.culprit);
    const std::string process = ProcessOf(g);
    *out += "  " + g.name + (where.empty() ? "" : " at " + where) + ": " +
            Plural(g.count, "hang", "hangs") + ", longest " +
            FormatMs(static_cast<double>(g.max_duration_ms)) +
            (process.empty() ? "" : ", " + process) + (IsMain(g.role) ? "" : ", thread " + g.role) +
            ", signature " + (g.signature.empty() ? "(none)" : g.signature);
    if (g.allowed != nullptr) *out += ", " + AllowedText(*g.allowed);
    if (g.failed) *out += "  FAILS";
    *out += "\n";
  }
}

std::string SlowKey(int t) { return std::to_string(kSlowPassThresholdsMs[t]); }

const uint64_t* SlowBudget(const RoleBudgets& b, int t) {
  for (const auto& [k, n] : b.max_slow_passes) {
    if (k == t) return &n;
  }
  return nullptr;
}

// --- markdown ---

std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Code(const std::string& s) {
  if (s.empty()) return "";
  return s.find('`') == std::string::npos ? "`" + Cell(s) + "`" : Cell(s);
}

void MarkdownGroups(const std::vector<HangGroup>& groups, bool with_status, std::string* out) {
  *out += with_status ? "| | culprit | source | hangs | longest | process | signature |\n"
                        "|---|---|---|---:|---:|---|---|\n"
                      : "| culprit | source | hangs | longest | process | signature |\n"
                        "|---|---|---:|---:|---|---|\n";
  size_t listed = 0;
  for (const HangGroup& g : groups) {
    if (listed++ == 100) {
      *out += "\n... and " + std::to_string(groups.size() - 100) + " more\n";
      break;
    }
    if (with_status) {
      *out +=
          "| " +
          std::string(g.failed               ? "\xE2\x9D\x8C fails"
                      : g.allowed != nullptr ? "\xE2\x9C\x85 allowed: " + Cell(g.allowed->reason)
                                             : "\xE2\x9A\xA0\xEF\xB8\x8F within budget") +
          " ";
    }
    *out += "| " + Code(g.name) + (IsMain(g.role) ? "" : " (thread " + Cell(g.role) + ")") + " | " +
            Code(CulpritLocation(g.culprit)) + " | " + std::to_string(g.count) + " | " +
            FormatMs(static_cast<double>(g.max_duration_ms)) + " | " + Cell(ProcessOf(g)) + " | " +
            Code(g.signature) + " |\n";
  }
}

// --- github ---

std::string EscapeData(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeProperty(const std::string& s) {
  std::string out;
  for (char c : EscapeData(s)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string FormatGateText(const GateVerdict& v, size_t max_listed) {
  std::string out = "hangwatch gate: ";
  out += v.passed ? "PASSED"
                  : "FAILED (" + Plural(v.violations.size(), "violation", "violations") + ")";
  out += "\n";
  for (const GateViolation& x : v.violations) out += "  - " + x.message + "\n";
  if (!v.has_baseline && !v.new_hangs.empty()) {
    out += "no baseline: every hang is new\n";
  }
  TextGroups("new hangs", v.new_hangs, max_listed, &out);
  TextGroups("known hangs (in the baseline)", v.known, max_listed, &out);
  TextGroups("fixed (in the baseline, not seen)", v.fixed, max_listed, &out);
  if (v.new_hangs.empty() && v.known.empty()) out += "no hangs\n";
  if (v.startup_stalls > 0) {
    out += Plural(v.startup_stalls, "start-up stall", "start-up stalls") +
           " (not judged by the gate; see hangwatch report)\n";
  }
  if (v.shutdown_hangs > 0) {
    out += Plural(v.shutdown_hangs, "shutdown-phase hang", "shutdown-phase hangs") +
           " (the process's own exit; not judged without --judge-shutdown)\n";
  }
  static const RoleBudgets kNone;
  for (const RoleLag& r : RoleLags(v)) {
    const LagFigures& f = r.lag->figures;
    const RoleBudgets& b = r.budgets != nullptr ? *r.budgets : kNone;
    out += (IsMain(r.role) ? std::string("lag: ") : "lag of thread " + r.role + ": ") +
           Plural(f.passes, "pass", "passes") + " in " +
           Plural(r.lag->records, "record", "records") + ": p50 " + FormatMs(f.p50_ms) + ", p90 " +
           FormatMs(f.p90_ms) + ", p95 " + FormatMs(f.p95_ms) + ", p99 " + FormatMs(f.p99_ms) +
           (b.max_p99_ms ? " (budget " + FormatMs(*b.max_p99_ms) + ")" : "") + ", max " +
           FormatMs(f.max_ms) + "\n  slow passes:";
    for (int t = 0; t < kSlowPassThresholds; ++t) {
      const uint64_t* budget = SlowBudget(b, t);
      out += " >" + SlowKey(t) + " ms " + std::to_string(f.slow_passes[t]) +
             (budget ? " (budget " + std::to_string(*budget) + ")" : "") +
             (t + 1 < kSlowPassThresholds ? "," : "\n");
    }
  }
  return EscapeForTerminal(out);
}

std::string FormatGateJson(const GateVerdict& v) {
  auto group = [](const HangGroup& g) {
    Json j;
    j["signature"] = g.signature;
    j["culprit"] = g.culprit_name;
    j["name"] = g.name;
    j["culprit_file"] = g.culprit.file;
    j["culprit_line"] = g.culprit.line;
    j["culprit_module"] = g.culprit.module;
    j["count"] = g.count;
    j["max_duration_ms"] = g.max_duration_ms;
    j["total_duration_ms"] = g.total_duration_ms;
    j["process"] = ProcessOf(g);
    if (!IsMain(g.role)) j["role"] = g.role;  // absent: the main thread's
    j["failed"] = g.failed;
    if (g.allowed != nullptr) {
      j["allowed"] = {{"pattern", g.allowed->pattern},
                      {"reason", g.allowed->reason},
                      {"line", g.allowed->line}};
    } else {
      j["allowed"] = nullptr;
    }
    const HangRecord& h = *g.longest;
    j["example"] = {{"pid", h.pid},
                    {"hang_id", h.hang_id},
                    {"host", h.host},
                    {"start_unix_ms", h.start_unix_ms},
                    {"duration_ms", h.duration_ms},
                    {"class", HangClassName(h.hang_class)},
                    {"fatal", h.fatal},
                    {"fingerprint", h.fingerprint}};
    return j;
  };
  auto groups = [&](const std::vector<HangGroup>& list) {
    Json a = Json::array();
    for (const HangGroup& g : list) a.push_back(group(g));
    return a;
  };
  Json j;
  j["passed"] = v.passed;
  j["new"] = groups(v.new_hangs);
  j["known"] = groups(v.known);
  j["fixed"] = groups(v.fixed);
  Json violations = Json::array();
  for (const GateViolation& x : v.violations) {
    Json e = {{"kind", x.kind}, {"message", x.message}};
    if (!x.signature.empty()) e["signature"] = x.signature;
    if (!IsMain(x.role)) e["role"] = x.role;
    if (x.kind != "no_lag" && x.kind != "new_hang") {
      e["value"] = x.value;
      e["budget"] = x.budget;
    }
    violations.push_back(std::move(e));
  }
  j["violations"] = std::move(violations);
  j["has_baseline"] = v.has_baseline;
  auto budgets_json = [](const RoleBudgets& b) {
    Json budgets = Json::object();
    if (b.max_hang_ms) budgets["max_hang_ms"] = *b.max_hang_ms;
    if (b.max_hangs) budgets["max_hangs"] = *b.max_hangs;
    if (b.max_p99_ms) budgets["max_p99_ms"] = *b.max_p99_ms;
    if (!b.max_slow_passes.empty()) {
      Json slow = Json::object();
      for (const auto& [t, n] : b.max_slow_passes) slow[SlowKey(t)] = n;
      budgets["max_slow_passes"] = std::move(slow);
    }
    return budgets;
  };
  auto lag_json = [](const LagSummary& lag) {
    const LagFigures& f = lag.figures;
    Json slow = Json::object();
    for (int t = 0; t < kSlowPassThresholds; ++t) slow[SlowKey(t)] = f.slow_passes[t];
    return Json{{"records", lag.records}, {"passes", f.passes}, {"busy_ms", f.busy_ms},
                {"p50_ms", f.p50_ms},     {"p90_ms", f.p90_ms}, {"p95_ms", f.p95_ms},
                {"p99_ms", f.p99_ms},     {"max_ms", f.max_ms}, {"slow_passes", slow}};
  };
  // The main thread's budgets and lag where they always were; other roles' beside them.
  Json budgets = budgets_json(v.budgets);
  if (!v.budgets.other_roles.empty()) {
    Json roles = Json::object();
    for (const auto& [role, b] : v.budgets.other_roles) roles[role] = budgets_json(b);
    budgets["roles"] = std::move(roles);
  }
  j["budgets"] = std::move(budgets);
  j["lag"] = v.lag ? lag_json(*v.lag) : Json(nullptr);
  if (!v.other_lags.empty()) {
    Json roles = Json::object();
    for (const auto& [role, lag] : v.other_lags) roles[role] = lag_json(lag);
    j["lag_by_role"] = std::move(roles);
  }
  j["startup_stalls"] = v.startup_stalls;
  j["shutdown_hangs"] = v.shutdown_hangs;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string FormatGateMarkdown(const GateVerdict& v) {
  size_t allowed = 0, failing = 0;
  for (const HangGroup& g : v.new_hangs) {
    allowed += g.allowed != nullptr;
    failing += g.failed;
  }
  std::string out = "### hangwatch gate: ";
  out += v.passed ? "\xE2\x9C\x85 passed\n\n"
                  : "\xE2\x9D\x8C failed (" +
                        Plural(v.violations.size(), "violation", "violations") + ")\n\n";
  out += Plural(v.new_hangs.size(), "new hang", "new hangs") + " (" + std::to_string(failing) +
         " failing, " + std::to_string(allowed) + " allowed), " + std::to_string(v.known.size()) +
         " known, " + std::to_string(v.fixed.size()) + " fixed" +
         (v.has_baseline ? "" : " (no baseline: every hang is new)") + ". Hangs are grouped " +
         "by signature, which is the same across builds.\n\n";
  if (!v.violations.empty()) {
    for (const GateViolation& x : v.violations) out += "- " + Cell(x.message) + "\n";
    out += "\n";
  }
  if (!v.new_hangs.empty()) {
    out += "#### New hangs\n\n";
    MarkdownGroups(v.new_hangs, true, &out);
    out += "\n";
  }
  if (!v.known.empty()) {
    out += "<details><summary>" + Plural(v.known.size(), "known hang", "known hangs") +
           " (in the baseline)</summary>\n\n";
    MarkdownGroups(v.known, false, &out);
    out += "\n</details>\n\n";
  }
  if (!v.fixed.empty()) {
    out += "<details><summary>" + Plural(v.fixed.size(), "fixed hang", "fixed hangs") +
           " (in the baseline, not seen)</summary>\n\n";
    MarkdownGroups(v.fixed, false, &out);
    out += "\n</details>\n\n";
  }
  out += "#### Lag\n\n";
  const std::vector<RoleLag> lags = RoleLags(v);
  if (lags.empty()) {
    out += "No lag records.\n";
    return EscapeForTerminal(out);
  }
  static const RoleBudgets kNone;
  for (const RoleLag& r : lags) {
    const LagFigures& f = r.lag->figures;
    const RoleBudgets& b = r.budgets != nullptr ? *r.budgets : kNone;
    if (!IsMain(r.role)) out += "\nThread " + Code(r.role) + ": ";
    out += Plural(f.passes, "run-loop pass", "run-loop passes") + " in " +
           Plural(r.lag->records, "lag record", "lag records") + ", " + FormatMs(f.busy_ms) +
           " busy.\n\n| | value | budget |\n|---|---:|---:|\n";
    auto row = [&](const std::string& name, const std::string& value, const std::string& budget,
                   bool over) {
      out += "| " + name + " | " + value + " | " + budget +
             (budget.empty() ? ""
              : over         ? " \xE2\x9D\x8C"
                             : " \xE2\x9C\x85") +
             " |\n";
    };
    row("p50", FormatMs(f.p50_ms), "", false);
    row("p90", FormatMs(f.p90_ms), "", false);
    row("p95", FormatMs(f.p95_ms), "", false);
    row("p99", FormatMs(f.p99_ms), b.max_p99_ms ? "\xE2\x89\xA4 " + FormatMs(*b.max_p99_ms) : "",
        b.max_p99_ms && f.p99_ms > *b.max_p99_ms);
    row("max", FormatMs(f.max_ms), "", false);
    for (int t = 0; t < kSlowPassThresholds; ++t) {
      const uint64_t* budget = SlowBudget(b, t);
      row("passes &gt; " + SlowKey(t) + " ms", std::to_string(f.slow_passes[t]),
          budget ? "\xE2\x89\xA4 " + std::to_string(*budget) : "",
          budget && f.slow_passes[t] > *budget);
    }
  }
  return EscapeForTerminal(out);
}

std::string GateCauseText(const HangRecord& h) {
  if (h.cause.empty()) return "";
  const std::string summary =
      h.cause.summary.empty() ? report::DescribeCause(h.cause, h.duration_ms) : h.cause.summary;
  return std::string(CauseKindName(h.cause.kind)) + ": " + summary;
}

std::string FormatGateGithub(const GateVerdict& v, const std::string& workspace) {
  std::string out;
  for (const HangGroup& g : v.new_hangs) {
    if (g.allowed != nullptr) continue;
    std::string file = g.culprit.file;
    if (!workspace.empty() && file.size() > workspace.size() + 1 &&
        file.compare(0, workspace.size(), workspace) == 0 && file[workspace.size()] == '/') {
      file = file.substr(workspace.size() + 1);
    }
    out += g.failed ? "::error " : "::warning ";
    if (!file.empty()) {
      out += "file=" + EscapeProperty(file);
      if (g.culprit.line > 0) out += ",line=" + std::to_string(g.culprit.line);
      out += ",";
    }
    out += "title=" + EscapeProperty(g.failed ? "hangwatch: new hang"
                                              : "hangwatch: new hang "
                                                "(within budget)");
    const std::string process = ProcessOf(g);
    out += "::" +
           EscapeData((IsMain(g.role) ? std::string("main thread") : "thread " + g.role) +
                      (process.empty() ? "" : " of " + process) + " stalled in " + g.name + ": " +
                      Plural(g.count, "hang", "hangs") + ", longest " +
                      FormatMs(static_cast<double>(g.max_duration_ms)) + " (signature " +
                      g.signature + ")" +
                      (g.longest == nullptr || g.longest->cause.empty()
                           ? std::string()
                           : "; cause " + GateCauseText(*g.longest))) +
           "\n";
  }
  for (const GateViolation& x : v.violations) {
    if (x.kind == "p99" || x.kind == "slow_passes" || x.kind == "no_lag" ||
        x.kind == "hang_count") {
      out += "::error title=" + EscapeProperty("hangwatch: " + x.kind) +
             "::" + EscapeData(x.message) + "\n";
    }
  }
  return EscapeForTerminal(out);
}

}  // namespace hangwatch::tools
