#include "tools/gate/gate_verdict.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "report/frame_classifier.h"
#include "report/record_types.h"
#include "report/stack_identity.h"
#include "tools/reader/report_frames.h"

namespace hangwatch::tools {
namespace {

bool IsSignature(std::string_view s) {
  if (s.size() != 16) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The application's frames past the culprit in the stack that holds it (in the group's longest
// hang), named, one per function (inlined copies and recursion collapsed).
std::vector<std::string> CallerNames(const HangGroup& g) {
  std::vector<std::string> out;
  // The stack the culprit is in (the dominant one unless the culprit is not in it).
  const Stack* d = nullptr;
  if (g.longest != nullptr && g.culprit.stack >= 0 &&
      static_cast<size_t>(g.culprit.stack) < g.longest->stacks.size()) {
    d = &g.longest->stacks[static_cast<size_t>(g.culprit.stack)];
  }
  if (d == nullptr || g.culprit.frame < 0) return out;
  std::string last = g.culprit_name;
  for (size_t i = static_cast<size_t>(g.culprit.frame) + 1; i < d->frames.size(); ++i) {
    const Frame& f = d->frames[i];
    if (report::ClassifyFrame(f) != report::FrameKind::kApp) continue;
    std::string name = IsInterpreted(f.language) ? f.symbol : FrameName(f);
    if (name == last) continue;
    last = name;
    out.push_back(std::move(name));
  }
  return out;
}

// Gives every group a name no other group has: the culprit, then as many callers as it takes,
// then "#2", "#3"... in signature order.
void NameGroups(const std::vector<HangGroup*>& groups) {
  std::vector<std::vector<std::string>> callers(groups.size());
  std::vector<bool> computed(groups.size(), false);
  for (HangGroup* g : groups) g->name = g->culprit_name;
  for (size_t depth = 1; depth <= report::kSignatureFrames; ++depth) {
    std::unordered_map<std::string, size_t> uses;
    for (HangGroup* g : groups) ++uses[g->name];
    bool any = false;
    for (size_t k = 0; k < groups.size(); ++k) {
      HangGroup* g = groups[k];
      if (uses[g->name] < 2) continue;
      if (!computed[k]) {
        callers[k] = CallerNames(*g);
        computed[k] = true;
      }
      if (callers[k].size() < depth) continue;
      g->name += " \xE2\x86\x90 " + callers[k][depth - 1];  // "←"
      any = true;
    }
    if (!any) break;
  }
  std::map<std::string, std::vector<HangGroup*>> by_name;
  for (HangGroup* g : groups) by_name[g->name].push_back(g);
  for (auto& [name, same] : by_name) {
    if (same.size() < 2) continue;
    std::sort(same.begin(), same.end(),
              [](const HangGroup* a, const HangGroup* b) { return a->signature < b->signature; });
    for (size_t k = 1; k < same.size(); ++k) same[k]->name += " #" + std::to_string(k + 1);
  }
}

void SortGroups(std::vector<HangGroup>* groups) {
  std::sort(groups->begin(), groups->end(), [](const HangGroup& a, const HangGroup& b) {
    if (a.max_duration_ms != b.max_duration_ms) return a.max_duration_ms > b.max_duration_ms;
    return a.signature < b.signature;
  });
}

// The key of a group: its signature for the main thread (as before threads had roles), the role
// and the signature for another role.
std::string GroupKey(std::string_view role, const std::string& signature) {
  return role == report::kMainRole ? signature : std::string(role) + '\n' + signature;
}

}  // namespace

const RoleBudgets* GateBudgets::ForRole(std::string_view role) const {
  role = report::RoleOrMain(role);
  if (role == report::kMainRole) return this;
  auto it = other_roles.find(std::string(role));
  return it == other_roles.end() ? nullptr : &it->second;
}

RoleBudgets* GateBudgets::MutableForRole(std::string_view role) {
  role = report::RoleOrMain(role);
  if (role == report::kMainRole) return this;
  return &other_roles[std::string(role)];
}

bool GateBudgets::HasHangBudget() const {
  if (HasHang()) return true;
  for (const auto& [role, b] : other_roles) {
    if (b.HasHang()) return true;
  }
  return false;
}

bool GateBudgets::HasLagBudget() const {
  if (HasLag()) return true;
  for (const auto& [role, b] : other_roles) {
    if (b.HasLag()) return true;
  }
  return false;
}

std::string RoleSuffix(std::string_view role) {
  role = report::RoleOrMain(role);
  return role == report::kMainRole ? "" : " (thread " + std::string(role) + ")";
}

bool ParseAllowList(std::string_view text, std::vector<AllowEntry>* out, std::string* error) {
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    // The reason follows the first '#' preceded by white space.
    size_t hash = std::string_view::npos;
    for (size_t k = 1; k < line.size(); ++k) {
      if (line[k] == '#' && (line[k - 1] == ' ' || line[k - 1] == '\t')) {
        hash = k;
        break;
      }
    }
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (hash == std::string_view::npos) {
      *error = where + "'" + std::string(line) +
               "' has no reason (write: SIGNATURE-OR-PATTERN  # why it is allowed)";
      return false;
    }
    const std::string_view pattern = Trim(line.substr(0, hash));
    const std::string_view reason = Trim(line.substr(hash + 1));
    if (reason.empty()) {
      *error = where + "the reason after '#' is empty";
      return false;
    }
    AllowEntry e;
    e.is_signature = IsSignature(pattern);
    e.pattern = e.is_signature ? Lower(pattern) : std::string(pattern);
    e.reason = std::string(reason);
    e.line = line_no;
    out->push_back(std::move(e));
  }
  return true;
}

const AllowEntry* FindAllowEntry(const std::vector<AllowEntry>& allow, const std::string& signature,
                                 const std::string& culprit_name, const std::string& python_label) {
  for (const AllowEntry& e : allow) {
    if (e.is_signature ? (!signature.empty() && e.pattern == signature)
                       : fnmatch(e.pattern.c_str(), culprit_name.c_str(), 0) == 0 ||
                             (!python_label.empty() &&
                              fnmatch(e.pattern.c_str(), python_label.c_str(), 0) == 0)) {
      return &e;
    }
  }
  return nullptr;
}

std::vector<HangGroup> GroupHangs(const std::vector<HangRecord>& hangs,
                                  const std::vector<HangTally>& tallies, bool skip_shutdown) {
  std::vector<HangGroup> groups;
  std::unordered_map<std::string, size_t> index;
  index.reserve(hangs.size() / 8 + 16);
  for (size_t k = 0; k < hangs.size(); ++k) {
    const HangRecord& h = hangs[k];
    if (skip_shutdown && h.phase == HangPhase::kShutdown) continue;
    std::string computed;
    if (h.signature.empty() && h.dominant() != nullptr) {
      computed = report::HangSignature(h.stacks, report::HangCulprit(h.stacks));
    }
    const std::string& sig = h.signature.empty() ? computed : h.signature;
    const std::string_view role = report::RoleOrMain(h.thread_role);
    auto [it, inserted] = index.try_emplace(GroupKey(role, sig), groups.size());
    if (inserted) {
      groups.emplace_back();
      groups.back().signature = sig;
      groups.back().role = role;
    }
    HangGroup& g = groups[it->second];
    if (tallies.empty()) {
      ++g.count;
      g.total_duration_ms += h.duration_ms;
    } else {
      g.count += tallies[k].count;
      g.total_duration_ms += tallies[k].total_duration_ms;
    }
    if (g.longest == nullptr || h.duration_ms > g.max_duration_ms) {
      g.longest = &h;
      g.max_duration_ms = h.duration_ms;
    }
  }
  for (HangGroup& g : groups) {
    g.culprit = HangCulprit(*g.longest);
    // A Python culprit's qualified name: its file and line are printed beside it.
    g.culprit_name =
        g.culprit.empty() ? "(no stack)" : CulpritLabel(g.culprit, CulpritLabelStyle::kFunction);
  }
  return groups;
}

size_t CountShutdownHangs(const std::vector<HangRecord>& hangs) {
  return static_cast<size_t>(std::count_if(hangs.begin(), hangs.end(), [](const HangRecord& h) {
    return h.phase == HangPhase::kShutdown;
  }));
}

void RemoveShutdownHangs(std::vector<HangRecord>* hangs) {
  std::erase_if(*hangs, [](const HangRecord& h) { return h.phase == HangPhase::kShutdown; });
}

namespace {

// The lag records of each role added up, never across roles: main's into v->lag, the others'
// into v->other_lags.
void SummarizeLag(const Report& report, size_t lag_records,
                  const std::map<std::string, size_t>& lag_records_by_role, GateVerdict* out) {
  GateVerdict& v = *out;
  if (!report.lags.empty()) {
    std::map<std::string, LagSummary> by_role;
    for (const Lag& l : report.lags) {
      LagSummary& s = by_role[std::string(report::RoleOrMain(l.thread_role))];
      ++s.records;
      s.passes.Merge(l.passes);
      s.delay.Merge(report::DelayOf(l));
      s.queued_passes += l.queued_passes;
    }
    for (auto& [role, s] : by_role) {
      if (auto it = lag_records_by_role.find(role); it != lag_records_by_role.end()) {
        s.records = it->second;
      } else if (lag_records != 0 && by_role.size() == 1) {
        s.records = lag_records;
      }
      s.figures = s.passes.Figures();
      s.delay_figures = s.delay.Figures();
      if (role == report::kMainRole) {
        v.lag = std::move(s);
      } else {
        v.other_lags.emplace(role, std::move(s));
      }
    }
  }
}

// --max-input-delay-ms against the input that waited on the display during a hang of `role`
// (report.input_waited_ms: a toolkit reads input before its loop waits again, so the lag
// records cannot count input's wait; the hangs' look at the connection can).
void JudgeInputWaits(const Report& report, const std::string& role, const RoleBudgets& b,
                     GateVerdict* out) {
  if (!b.max_input_delay_ms) return;
  auto it = report.input_waited_ms.find(role);
  if (it == report.input_waited_ms.end()) return;
  const auto waited = static_cast<double>(it->second);
  if (waited <= *b.max_input_delay_ms) return;
  GateViolation x;
  x.kind = "input_delay";
  x.role = role;
  x.value = waited;
  x.budget = *b.max_input_delay_ms;
  x.message = "input waited " + FormatMs(waited) + " on the display during a hang" +
              RoleSuffix(role) + ", over the budget of " + FormatMs(x.budget);
  out->violations.push_back(std::move(x));
}

// The lag budgets of `role` against its lag records' figures.
void JudgeLag(const std::string& role, const RoleBudgets& b, GateVerdict* out) {
  GateVerdict& v = *out;
  if (!b.HasLag()) return;
  const LagSummary* lag = nullptr;
  if (role == report::kMainRole) {
    lag = v.lag ? &*v.lag : nullptr;
  } else if (auto it = v.other_lags.find(role); it != v.other_lags.end()) {
    lag = &it->second;
  }
  if (lag == nullptr) {
    GateViolation x;
    x.kind = "no_lag";
    x.role = role;
    x.message = "no lag records" + RoleSuffix(role) + " to check the lag budget against";
    v.violations.push_back(std::move(x));
    return;
  }
  const LagFigures& f = lag->figures;
  if (b.max_p99_ms && f.p99_ms > *b.max_p99_ms) {
    GateViolation x;
    x.kind = "p99";
    x.role = role;
    x.value = f.p99_ms;
    x.budget = *b.max_p99_ms;
    x.message = "p99 pass duration" + RoleSuffix(role) + " " + FormatMs(f.p99_ms) +
                " over the budget of " + FormatMs(*b.max_p99_ms) + " (" + std::to_string(f.passes) +
                " passes)";
    v.violations.push_back(std::move(x));
  }
  for (const auto& [t, n] : b.max_slow_passes) {
    if (f.slow_passes[t] <= n) continue;
    GateViolation x;
    x.kind = "slow_passes";
    x.role = role;
    x.value = static_cast<double>(f.slow_passes[t]);
    x.budget = static_cast<double>(n);
    x.message = std::to_string(f.slow_passes[t]) + " passes" + RoleSuffix(role) + " longer than " +
                std::to_string(kSlowPassThresholdsMs[t]) + " ms, budget " + std::to_string(n);
    v.violations.push_back(std::move(x));
  }
  if (b.max_input_delay_ms && lag->delay_figures.max_ms > *b.max_input_delay_ms) {
    GateViolation x;
    x.kind = "input_delay";
    x.role = role;
    x.value = lag->delay_figures.max_ms;
    x.budget = *b.max_input_delay_ms;
    x.message = "longest input delay (queued + running)" + RoleSuffix(role) + " " +
                FormatMs(x.value) + " over the budget of " + FormatMs(x.budget) + " (" +
                std::to_string(lag->queued_passes) + " of " + std::to_string(f.passes) +
                " passes had a known wait)";
    v.violations.push_back(std::move(x));
  }
}

}  // namespace

GateVerdict ComputeVerdict(const Report& report, const std::vector<HangRecord>* baseline,
                           const std::vector<AllowEntry>& allow, const GateBudgets& budgets) {
  return ComputeVerdict(report, {}, 0, baseline, {}, allow, budgets);
}

GateVerdict ComputeVerdict(const Report& report, const std::vector<HangTally>& report_tallies,
                           size_t lag_records, const std::vector<HangRecord>* baseline,
                           const std::vector<HangTally>& baseline_tallies,
                           const std::vector<AllowEntry>& allow, const GateBudgets& budgets,
                           const std::map<std::string, size_t>& lag_records_by_role) {
  GateVerdict v;
  v.budgets = budgets;
  v.has_baseline = baseline != nullptr;
  v.startup_stalls = report.startup_stalls.size();
  if (!budgets.judge_shutdown) {
    for (size_t k = 0; k < report.hangs.size(); ++k) {
      if (report.hangs[k].phase != HangPhase::kShutdown) continue;
      v.shutdown_hangs += report_tallies.empty() ? 1 : report_tallies[k].count;
    }
  }

  std::vector<HangGroup> current =
      GroupHangs(report.hangs, report_tallies, /*skip_shutdown=*/!budgets.judge_shutdown);
  std::unordered_set<std::string> in_baseline, seen;
  std::vector<HangGroup> before;
  if (baseline != nullptr) {
    before = GroupHangs(*baseline, baseline_tallies);
    for (const HangGroup& g : before) in_baseline.insert(GroupKey(g.role, g.signature));
  }
  for (HangGroup& g : current) {
    const std::string key = GroupKey(g.role, g.signature);
    seen.insert(key);
    g.allowed = FindAllowEntry(allow, g.signature, g.culprit_name,
                               IsInterpreted(g.culprit.language)
                                   ? CulpritLabel(g.culprit, CulpritLabelStyle::kName)
                                   : std::string());
    (in_baseline.count(key) ? v.known : v.new_hangs).push_back(std::move(g));
  }
  for (HangGroup& g : before) {
    if (!seen.count(GroupKey(g.role, g.signature))) v.fixed.push_back(std::move(g));
  }
  SortGroups(&v.new_hangs);
  SortGroups(&v.known);
  SortGroups(&v.fixed);
  std::vector<HangGroup*> all;
  for (auto* list : {&v.new_hangs, &v.known, &v.fixed}) {
    for (HangGroup& g : *list) all.push_back(&g);
  }
  NameGroups(all);

  // Hang budgets: the new hangs nothing allows, per role.
  std::vector<HangGroup*> judged;
  std::map<std::string, std::vector<HangGroup*>> judged_by_role;
  for (HangGroup& g : v.new_hangs) {
    if (g.allowed != nullptr) continue;
    judged.push_back(&g);
    judged_by_role[g.role].push_back(&g);
  }
  auto hang_violation = [&](const std::string& kind, const HangGroup& g, const std::string& what,
                            double value, double budget) {
    GateViolation x;
    x.kind = kind;
    x.signature = g.signature;
    x.role = g.role;
    x.value = value;
    x.budget = budget;
    const std::string where = CulpritLocation(g.culprit);
    x.message = what + RoleSuffix(g.role) + " in " + g.name +
                (where.empty() ? "" : " (" + where + ")") + ": " + std::to_string(g.count) +
                (g.count == 1 ? " hang" : " hangs") + ", longest " +
                FormatMs(static_cast<double>(g.max_duration_ms));
    v.violations.push_back(std::move(x));
  };
  if (!budgets.HasHangBudget()) {
    for (HangGroup* g : judged) {
      g->failed = true;
      hang_violation("new_hang", *g, "new hang", static_cast<double>(g->count), 0);
    }
  } else {
    // Main's groups first, then the other roles' in the order of their names (std::map).
    std::vector<std::string> roles;
    if (judged_by_role.count(std::string(report::kMainRole))) {
      roles.emplace_back(report::kMainRole);
    }
    for (const auto& [role, groups] : judged_by_role) {
      if (role != report::kMainRole) roles.push_back(role);
    }
    for (const std::string& role : roles) {
      const RoleBudgets* b = budgets.ForRole(role);
      if (b == nullptr) continue;  // a role without budgets is listed, not judged
      const std::vector<HangGroup*>& groups = judged_by_role[role];
      if (b->max_hang_ms) {
        for (HangGroup* g : groups) {
          if (g->max_duration_ms <= *b->max_hang_ms) continue;
          g->failed = true;
          hang_violation("hang_duration", *g,
                         "new hang longer than " + FormatMs(static_cast<double>(*b->max_hang_ms)),
                         static_cast<double>(g->max_duration_ms),
                         static_cast<double>(*b->max_hang_ms));
        }
      }
      uint64_t counted = 0;
      for (const HangGroup* g : groups) counted += g->count;
      if (b->max_hangs && counted > *b->max_hangs) {
        for (HangGroup* g : groups) g->failed = true;
        GateViolation x;
        x.kind = "hang_count";
        x.role = role;
        x.value = static_cast<double>(counted);
        x.budget = static_cast<double>(*b->max_hangs);
        x.message = std::to_string(counted) + " new hangs" + RoleSuffix(role) + " (" +
                    std::to_string(groups.size()) +
                    (groups.size() == 1 ? " signature" : " signatures") + "), budget " +
                    std::to_string(*b->max_hangs);
        v.violations.push_back(std::move(x));
      }
    }
  }

  SummarizeLag(report, lag_records, lag_records_by_role, &v);
  JudgeLag(std::string(report::kMainRole), budgets, &v);
  for (const auto& [role, b] : budgets.other_roles) JudgeLag(role, b, &v);
  JudgeInputWaits(report, std::string(report::kMainRole), budgets, &v);
  for (const auto& [role, b] : budgets.other_roles) JudgeInputWaits(report, role, b, &v);
  v.passed = v.violations.empty();
  return v;
}

std::string FormatMs(double ms) {
  char buf[48];
  if (std::fabs(ms - std::round(ms)) < 0.005) {
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  }
  return buf;
}

}  // namespace hangwatch::tools
