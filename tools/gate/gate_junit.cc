// JUnit XML of a gate verdict: one test case per signature, one per lag budget.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "report/names.h"
#include "report/record_types.h"
#include "tools/common/junit_writer.h"
#include "tools/gate/gate_output.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

// A failed case, or a passed one.
void SetFailed(JunitCase* c, bool failed) {
  c->outcome = failed ? JunitCase::Outcome::kFailure : JunitCase::Outcome::kPassed;
}
bool Failed(const JunitCase& c) { return c.outcome == JunitCase::Outcome::kFailure; }

std::string GroupMessage(const HangGroup& g) {
  const HangRecord& h = *g.longest;
  const std::string process(report::ProcessName(h.process_name, h.process));
  const std::string where = CulpritLocation(g.culprit);
  const std::string_view role = report::RoleOrMain(g.role);
  return (role == report::kMainRole ? std::string("main thread") : "thread " + std::string(role)) +
         " of " + (process.empty() ? std::string("?") : process) + " stalled " +
         std::to_string(g.count) + (g.count == 1 ? " time" : " times") + ", longest " +
         FormatMs(static_cast<double>(g.max_duration_ms)) + " (" + HangClassName(h.hang_class) +
         ", CPU " + std::to_string(h.cpu_percent) + "%) in " + g.culprit_name +
         (where.empty() ? "" : " at " + where) + "; signature " +
         (g.signature.empty() ? "(none)" : g.signature) +
         (h.cause.empty() ? "" : "; cause " + GateCauseText(h));
}

JunitCase HangCase(const HangGroup& g, const char* status) {
  JunitCase c;
  c.classname = "hangwatch.hangs";
  c.name = "hang in " + g.name + RoleSuffix(g.role);
  c.seconds = static_cast<double>(g.total_duration_ms) / 1000.0;
  SetFailed(&c, g.failed);
  if (g.failed) {
    c.type = "hang";
    c.message = "new hang: " + GroupMessage(g);
    Report one;
    one.hangs.push_back(*g.longest);
    c.body = FormatSummary(one, 32);
  } else {
    c.out = std::string(status) + ": " + GroupMessage(g);
    if (g.allowed != nullptr) {
      c.out += "\nallowed by line " + std::to_string(g.allowed->line) + " of the allow file (" +
               g.allowed->pattern + "): " + g.allowed->reason;
    }
  }
  return c;
}

}  // namespace

std::string FormatGateJunit(const GateVerdict& v, const std::string& suite, double elapsed_s) {
  std::vector<JunitCase> cases;
  for (const HangGroup& g : v.new_hangs) {
    cases.push_back(HangCase(g, g.allowed != nullptr ? "new, allowed" : "new, within budget"));
  }
  for (const HangGroup& g : v.known) cases.push_back(HangCase(g, "known (in the baseline)"));
  for (const HangGroup& g : v.fixed) {
    JunitCase c = HangCase(g, "fixed (in the baseline, not seen in this run)");
    c.seconds = 0;
    cases.push_back(std::move(c));
  }
  // The budgets of each role: main's (named as before roles), then the others'.
  std::vector<std::pair<std::string, const RoleBudgets*>> roles = {
      {std::string(report::kMainRole), &v.budgets}};
  for (const auto& [role, b] : v.budgets.other_roles) roles.emplace_back(role, &b);
  for (const auto& [role, b] : roles) {
    // The violations of the role that are not one hang's.
    const GateViolation* no_lag = nullptr;
    const GateViolation* count = nullptr;
    for (const GateViolation& x : v.violations) {
      if (report::RoleOrMain(x.role) != role) continue;
      if (x.kind == "no_lag") no_lag = &x;
      if (x.kind == "hang_count") count = &x;
    }
    const std::string suffix = RoleSuffix(role);
    if (b->max_hangs) {
      JunitCase c;
      c.classname = "hangwatch.budget";
      c.name = "at most " + std::to_string(*b->max_hangs) + " new hangs" + suffix;
      SetFailed(&c, count != nullptr);
      c.type = "hang_count";
      c.message = count ? count->message : "";
      cases.push_back(std::move(c));
    }
    auto lag_case = [&](const std::string& name, const std::string& kind, bool over,
                        const std::string& text) {
      JunitCase c;
      c.classname = "hangwatch.lag";
      c.name = name;
      SetFailed(&c, no_lag != nullptr || over);
      c.type = no_lag ? "no_lag" : kind;
      c.message = no_lag ? no_lag->message : text;
      if (!Failed(c)) c.out = text;
      cases.push_back(std::move(c));
    };
    const LagSummary* lag = nullptr;
    if (role == report::kMainRole) {
      lag = v.lag ? &*v.lag : nullptr;
    } else if (auto it = v.other_lags.find(role); it != v.other_lags.end()) {
      lag = &it->second;
    }
    const LagFigures* f = lag ? &lag->figures : nullptr;
    if (b->max_p99_ms) {
      const double budget = *b->max_p99_ms;
      lag_case("p99 pass duration" + suffix + " at most " + FormatMs(budget), "p99",
               f != nullptr && f->p99_ms > budget,
               f ? "p99 " + FormatMs(f->p99_ms) + " of " + std::to_string(f->passes) +
                       " passes, budget " + FormatMs(budget)
                 : "");
    }
    for (const auto& [t, n] : b->max_slow_passes) {
      const std::string ms = std::to_string(kSlowPassThresholdsMs[t]);
      lag_case("at most " + std::to_string(n) + " passes" + suffix + " longer than " + ms + " ms",
               "slow_passes", f != nullptr && f->slow_passes[t] > n,
               f ? std::to_string(f->slow_passes[t]) + " passes longer than " + ms + " ms of " +
                       std::to_string(f->passes) + ", budget " + std::to_string(n)
                 : "");
    }
  }
  if (cases.empty()) {
    JunitCase c;
    c.classname = "hangwatch.hangs";
    c.name = "no hangs";
    c.seconds = elapsed_s;
    c.out = "the main thread never stalled";
    cases.push_back(std::move(c));
  }

  return FormatJunitXml({"hangwatch gate", suite, elapsed_s, std::move(cases)});
}

}  // namespace hangwatch::tools
