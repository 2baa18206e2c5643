// The verdict of `hangwatch gate` (and of `hangwatch run` with budget flags), apart from how it
// is printed (tools/gate/gate_output.h) and where its inputs come from (tools/gate/gate_options.h):
//
//   - the hangs of the reports, grouped by signature (the same across builds), are sorted into
//     new (not in the baseline), known (in the baseline) and fixed (in the baseline, not seen);
//   - an allow list names hangs that never fail the gate (by signature or by a glob on the
//     culprit's function), each with a reason;
//   - hang budgets judge the new hangs that are not allowed: --max-hang-ms (each such hang's
//     duration), --max-hangs (how many such hangs, records counted); without either, every new
//     hang that is not allowed fails the gate. Known and allowed hangs never fail it: they are
//     listed;
//   - hangs of the shutdown phase (a pass that ended because the process exited: the program's
//     own shutdown work, "phase": "shutdown") are not judged unless --judge-shutdown: they are
//     counted (GateVerdict::shutdown_hangs);
//   - lag budgets judge the pass durations of all lag records of one thread role added together:
//     --max-p99-ms and --max-slow-passes MS:N;
//   - every budget is per thread role (the record's "thread": "main", "render", ...): a plain
//     value is main's, ROLE=VALUE (comma-separated) another role's. Hangs are grouped by role and
//     signature, lag records added up per role, never across roles. With hang budgets, the
//     hangs of a role without one are listed, not judged.
#ifndef HANGWATCH_TOOLS_GATE_VERDICT_H_
#define HANGWATCH_TOOLS_GATE_VERDICT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangwatch/hang_record.h"
#include "hangwatch/pass_histogram.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// One line of an allow file (docs: tools/README.md, `hangwatch gate --help`):
//   SIGNATURE-OR-PATTERN  # reason
// where a 16-hex-digit word is a signature and anything else a glob (fnmatch: *, ?, [...]) on
// the culprit's function name.
struct AllowEntry {
  std::string pattern;
  bool is_signature = false;
  std::string reason;
  int line = 0;  // in the allow file, 1-based
};

// Parses an allow file. Blank lines and lines starting with '#' are ignored. False with
// "line N: ..." in *error for a line without a reason (" # " followed by text) or without a
// pattern.
bool ParseAllowList(std::string_view text, std::vector<AllowEntry>* out, std::string* error);

// The first entry that allows a hang with this signature and culprit name (HangGroup's
// culprit_name: a Python culprit's qualified name "Handler.handle"; or `python_label`, its
// CulpritLabel kName "Handler.handle (app.py:42)", matches a glob); nullptr when none.
const AllowEntry* FindAllowEntry(const std::vector<AllowEntry>& allow, const std::string& signature,
                                 const std::string& culprit_name,
                                 const std::string& python_label = "");

// The budgets of one thread role.
struct RoleBudgets {
  std::optional<uint64_t> max_hang_ms;  // a new, not allowed hang longer than this fails
  std::optional<uint64_t> max_hangs;    // more new, not allowed hangs (records) than this fail
  std::optional<double> max_p99_ms;     // the merged p99 pass duration
  // (index into kSlowPassThresholdsMs, N): more than N passes longer than that many ms fail.
  std::vector<std::pair<int, uint64_t>> max_slow_passes;
  // The longest queued + running time of a pass (the lag records' "delay": its own time plus
  // how long its work had waited, where the loop knew; its time alone where not).
  std::optional<double> max_input_delay_ms;

  bool HasHang() const { return max_hang_ms.has_value() || max_hangs.has_value(); }
  bool HasLag() const {
    return max_p99_ms.has_value() || !max_slow_passes.empty() || max_input_delay_ms.has_value();
  }
};

// The base: the main thread's budgets (a plain value of a flag, or main=VALUE); other_roles: the
// budgets of ROLE=VALUE for every other role.
struct GateBudgets : RoleBudgets {
  std::map<std::string, RoleBudgets> other_roles;
  // --judge-shutdown: shutdown-phase hangs are judged like the others (else only counted).
  bool judge_shutdown = false;

  // The budgets of `role` ("" or "main": the base); nullptr when it has none.
  const RoleBudgets* ForRole(std::string_view role) const;
  RoleBudgets* MutableForRole(std::string_view role);
  // Any role has one.
  bool HasHangBudget() const;
  bool HasLagBudget() const;
};

// The hangs of one signature on threads of one role.
struct HangGroup {
  std::string signature;      // "" for hangs without a stack
  std::string role = "main";  // the thread role of its hangs (report::RoleOrMain)
  size_t count = 0;           // records
  uint64_t max_duration_ms = 0;
  uint64_t total_duration_ms = 0;
  const HangRecord* longest = nullptr;  // its culprit names the group
  Culprit culprit;
  std::string culprit_name;  // CulpritLabel kFunction, "(no stack)" without one
  // A readable name unique among the groups of one verdict: the culprit's function, followed by
  // its callers ("f ← g") when another group has the same culprit, "#2"... as a last resort.
  std::string name;
  const AllowEntry* allowed = nullptr;  // into GateInputs::allow
  bool failed = false;                  // broke a hang budget (new and not allowed only)
};

// A hang record that stands for `count` records of its signature (it is the longest of them),
// whose durations add up to `total_duration_ms` (tools/gate/gate_reader.h).
struct HangTally {
  size_t count = 1;
  uint64_t total_duration_ms = 0;
};

// Groups hangs by thread role and signature (a hang without one gets it computed from its
// dominant stack when it has one, as RefreshHangIdentity does), in order of first appearance.
// `tallies`: empty (each hang is one record) or one per hang. `skip_shutdown`: shutdown-phase hangs
// are left out.
std::vector<HangGroup> GroupHangs(const std::vector<HangRecord>& hangs,
                                  const std::vector<HangTally>& tallies = {},
                                  bool skip_shutdown = false);

struct GateViolation {
  std::string kind;  // "new_hang", "hang_duration", "hang_count", "p99", "slow_passes", "no_lag"
  std::string message;
  std::string signature;      // for the hang kinds that concern one group
  std::string role = "main";  // the thread role whose budget it broke
  double value = 0;
  double budget = 0;
};

struct LagSummary {
  size_t records = 0;
  PassHistogram passes;  // every record added
  LagFigures figures;
  PassHistogram delay;  // queued + running of every record added (report::DelayOf)
  LagFigures delay_figures;
  uint64_t queued_passes = 0;  // passes whose wait was known
};

struct GateVerdict {
  bool passed = true;
  bool has_baseline = false;
  // Each sorted by longest hang, longest first (then signature).
  std::vector<HangGroup> new_hangs, known, fixed;
  std::vector<GateViolation> violations;
  std::optional<LagSummary> lag;  // the main thread's, when the reports had lag records of it
  // The lag records of each other role, added up per role (never into `lag`).
  std::map<std::string, LagSummary> other_lags;
  GateBudgets budgets;
  size_t startup_stalls = 0;  // listed, never judged
  // Records of shutdown-phase hangs left unjudged (0 with --judge-shutdown, which judges them).
  size_t shutdown_hangs = 0;
};

// `baseline`: the hangs of earlier reports (nullptr: no baseline, every hang is new). The
// verdict points into `report`, `baseline` and `allow`, which must outlive it. A lag budget
// without lag records in `report` is a violation ("no_lag"); `hangwatch gate` refuses that input
// before computing a verdict.
GateVerdict ComputeVerdict(const Report& report, const std::vector<HangRecord>* baseline,
                           const std::vector<AllowEntry>& allow, const GateBudgets& budgets);

// The same with hangs tallied per signature (tools/gate/gate_reader.h): `report_tallies` parallel
// to report.hangs, `baseline_tallies` to *baseline (each may be empty: one record per hang);
// `lag_records`: how many lag records report.lags stands for (0: report.lags.size()), or when
// report.lags holds one merged record per role, `lag_records_by_role` (role -> records).
GateVerdict ComputeVerdict(const Report& report, const std::vector<HangTally>& report_tallies,
                           size_t lag_records, const std::vector<HangRecord>* baseline,
                           const std::vector<HangTally>& baseline_tallies,
                           const std::vector<AllowEntry>& allow, const GateBudgets& budgets,
                           const std::map<std::string, size_t>& lag_records_by_role = {});

// "" for the main thread, " (thread ROLE)" for another role: what the messages add.
std::string RoleSuffix(std::string_view role);

// How many of `hangs` are of the shutdown phase (HangPhase::kShutdown); takes them out.
size_t CountShutdownHangs(const std::vector<HangRecord>& hangs);
void RemoveShutdownHangs(std::vector<HangRecord>* hangs);

// "16 ms" style durations for messages: integers without decimals, else one or two decimals.
std::string FormatMs(double ms);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_VERDICT_H_
