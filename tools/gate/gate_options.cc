#include "tools/gate/gate_options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <tuple>

#include "report/record_types.h"
#include "tools/gate/gate_output.h"
#include "tools/gate/gate_reader.h"
#include "tools/reader/input_file.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {
namespace {

bool ParseMs(const std::string& s, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || !(v > 0) ||
      v > 3.6e6) {
    return false;
  }
  *out = v;
  return true;
}

// A budget flag's value: "VALUE" (the main thread's) or "ROLE=VALUE", several comma-separated
// ("render=50,main=250"). Calls fn(role, value) for each; false, with *bad the item, when one has
// an empty role or value, or fn refuses it.
template <typename Fn>
bool ForEachRoleValue(std::string_view v, std::string* bad, Fn&& fn) {
  while (true) {
    const size_t comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    const size_t eq = item.find('=');
    const std::string role(eq == std::string_view::npos ? report::kMainRole : item.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? item : item.substr(eq + 1);
    if (role.empty() || value.empty() || !fn(role, std::string(value))) {
      *bad = std::string(item);
      return false;
    }
    if (comma == std::string_view::npos) return true;
    v.remove_prefix(comma + 1);
  }
}

// A value without a role (its error message is the one of the flag before roles).
bool IsPlain(std::string_view v) { return v.find_first_of("=,") == std::string_view::npos; }

// The same rule as the reports (tools/reader/input_file.h): a FIFO or a device is refused, not
// waited on.
bool ReadText(const std::string& path, std::string* text, std::string* error) {
  InputFile file;
  return file.Open(path, error) && file.ReadAll(text, error);
}

}  // namespace

const char kGateFlagsUsage[] =
    "  --baseline FILE    the report of an earlier run (e.g. of the main branch): its hangs are\n"
    "                     known, the others new, by signature (the same across builds)\n"
    "  --allow FILE       an allow list: per line 'SIGNATURE-OR-PATTERN  # reason', where a\n"
    "                     16-hex-digit signature or a glob on the culprit's function (ns::Slow*,\n"
    "                     a Python culprit's qualified name or 'Handler.handle (app.py:42)')\n"
    "                     names hangs that never fail the gate; the reason is required\n"
    "  --max-hang-ms N    a new hang (not allowed) longer than N ms fails the gate\n"
    "  --max-hangs N      more than N new hangs (not allowed; records counted) fail the gate\n"
    "                     (without --max-hang-ms / --max-hangs every new hang fails it)\n"
    "  --max-p99-ms N     the p99 run-loop pass duration of all lag records together must not\n"
    "                     exceed N ms\n"
    "  --max-slow-passes MS:N   at most N passes longer than MS ms (16, 33, 50, 100, 250,\n"
    "                     500, 1000); repeatable\n"
    "  --max-input-delay-ms N   no pass's queued + running time (its own time plus how long\n"
    "                     its work had waited, where the loop knew: a late timer) over N ms,\n"
    "                     and no input waiting on the display during a hang longer than N ms\n"
    "                     Each budget is the main thread's; ROLE=VALUE[,ROLE=VALUE...] gives\n"
    "                     the budgets of watched threads by role (--max-hang-ms render=50,\n"
    "                     main=250; --max-slow-passes render=16:0). Lag is judged per role,\n"
    "                     never summed across roles; with hang budgets, a role without one\n"
    "                     is listed, not judged\n"
    "  --judge-shutdown   judge shutdown-phase hangs too (a pass the process's exit ended:\n"
    "                     its own shutdown work, \"phase\": \"shutdown\"); without it they\n"
    "                     are counted, never fail the gate\n"
    "  --markdown FILE    append a Markdown summary to FILE (e.g. $GITHUB_STEP_SUMMARY)\n"
    "  --github           print GitHub Actions annotations (::error file=...,line=...::) at\n"
    "                     the source line of each new hang's culprit\n";

void AddGateFlags(FlagParser* parser, bool baseline_lists, GateOptions* options) {
  auto baseline = [options](const std::string& v) {
    options->baselines.push_back(v);
    options->gating = true;
    return std::string();
  };
  if (baseline_lists) {
    parser->List({"--baseline"}, baseline);
  } else {
    parser->Value({"--baseline"}, baseline);
  }
  parser->Value({"--allow"}, [options](const std::string& v) -> std::string {
    if (!options->allow_path.empty()) return "--allow is given twice (one allow file)";
    options->allow_path = v;
    options->gating = true;
    return "";
  });
  // Hang budgets: whole numbers, per role.
  for (auto [flag, min, wants, member] :
       {std::tuple{"--max-hang-ms", 1, " wants a number of milliseconds (1 or more)",
                   &RoleBudgets::max_hang_ms},
        std::tuple{"--max-hangs", 0, " wants a number of hangs (0 or more)",
                   &RoleBudgets::max_hangs}}) {
    // Init-captures: a lambda may not name a structured binding before C++20 compilers that
    // implement P1091 (clang 16).
    parser->Value({flag},
                  [options, flag = flag, min = min, wants = wants,
                   member = member](const std::string& v) -> std::string {
                    std::string bad;
                    const bool ok = ForEachRoleValue(
                        v, &bad, [&](const std::string& role, const std::string& value) {
                          uint64_t n;
                          if (!ParseWholeNumber(value, min, UINT64_MAX, &n)) return false;
                          options->budgets.MutableForRole(role)->*member = n;
                          return true;
                        });
                    if (!ok) {
                      return flag + (wants +
                                     std::string(IsPlain(v) ? ""
                                                            : " or ROLE=N,... "
                                                              "(render=50,main=250)") +
                                     ", not '" + bad + "'");
                    }
                    options->gating = true;
                    return "";
                  });
  }
  parser->Value({"--max-p99-ms"}, [options](const std::string& v) -> std::string {
    std::string bad;
    if (!ForEachRoleValue(v, &bad, [&](const std::string& role, const std::string& value) {
          double ms;
          if (!ParseMs(value, &ms)) return false;
          options->budgets.MutableForRole(role)->max_p99_ms = ms;
          return true;
        })) {
      return std::string("--max-p99-ms wants milliseconds (e.g. 16 or 8.5)") +
             (IsPlain(v) ? "" : " or ROLE=MS,... (render=16.7)") + ", not '" + bad + "'";
    }
    options->gating = true;
    return "";
  });
  parser->Value({"--max-input-delay-ms"}, [options](const std::string& v) -> std::string {
    std::string bad;
    if (!ForEachRoleValue(v, &bad, [&](const std::string& role, const std::string& value) {
          double ms;
          if (!ParseMs(value, &ms)) return false;
          options->budgets.MutableForRole(role)->max_input_delay_ms = ms;
          return true;
        })) {
      return std::string("--max-input-delay-ms wants milliseconds (e.g. 100)") +
             (IsPlain(v) ? "" : " or ROLE=MS,... (render=50)") + ", not '" + bad + "'";
    }
    options->gating = true;
    return "";
  });
  parser->Value({"--max-slow-passes"}, [options](const std::string& v) -> std::string {
    std::string bad, twice;
    const bool ok =
        ForEachRoleValue(v, &bad, [&](const std::string& role, const std::string& value) {
          const size_t colon = value.find(':');
          uint64_t ms = 0, n = 0;
          int t = -1;
          if (colon != std::string::npos &&
              ParseWholeNumber(std::string_view(value).substr(0, colon), 1, UINT64_MAX, &ms)) {
            for (int k = 0; k < kSlowPassThresholds; ++k) {
              if (static_cast<uint64_t>(kSlowPassThresholdsMs[k]) == ms) t = k;
            }
          }
          if (t < 0 ||
              !ParseWholeNumber(std::string_view(value).substr(colon + 1), 0, UINT64_MAX, &n)) {
            return false;
          }
          RoleBudgets* b = options->budgets.MutableForRole(role);
          for (auto& [k, budget] : b->max_slow_passes) {
            if (k == t) {
              twice = (role == report::kMainRole ? "" : role + "=") + std::to_string(ms);
              return true;
            }
          }
          b->max_slow_passes.emplace_back(t, n);
          return true;
        });
    if (!ok) {
      return std::string(
                 "--max-slow-passes wants MS:N with MS one of 16, 33, 50, 100, 250, "
                 "500, 1000 (e.g. 50:10)") +
             (IsPlain(v) ? "" : ", or ROLE=MS:N (render=16:0)") + ", not '" + bad + "'";
    }
    if (!twice.empty()) return "--max-slow-passes " + twice + ":... is given twice";
    options->gating = true;
    return "";
  });
  // Not a gating flag by itself: `hangwatch run --fail-on-hang` honours it without the gate's
  // verdict.
  parser->Switch({"--judge-shutdown"}, [options] { options->budgets.judge_shutdown = true; });
  parser->String({"--junit"}, &options->junit);
  parser->Value({"--markdown"}, [options](const std::string& v) {
    options->markdown = v;
    options->gating = true;
    return std::string();
  });
  parser->Switch({"--github"}, [options] { options->github = options->gating = true; });
}

bool LoadGateInputs(const GateOptions& options, GateInputs* inputs, std::string* error) {
  for (const std::string& path : options.baselines) {
    Report r;
    std::vector<HangTally> tallies;
    size_t lag_records = 0;
    if (!ReadReportsForGate({path}, &r, &tallies, &lag_records, error)) {
      *error = "baseline " + *error;
      return false;
    }
    if (r.hangs.empty() && r.lags.empty() && r.startup_stalls.empty() && r.skipped_lines == 0 &&
        r.unknown_records == 0) {
      *error = "baseline " + path +
               " is empty: a baseline is the report of an earlier run (hangs and lag records); "
               "an empty file means that run recorded nothing";
      return false;
    }
    for (size_t k = 0; k < r.hangs.size(); ++k) {
      inputs->baseline.push_back(std::move(r.hangs[k]));
      inputs->baseline_tallies.push_back(tallies[k]);
    }
    inputs->has_baseline = true;
  }
  if (!options.allow_path.empty()) {
    std::string text;
    if (!ReadText(options.allow_path, &text, error)) {
      *error = "allow file " + *error;
      return false;
    }
    std::string why;
    if (!ParseAllowList(text, &inputs->allow, &why)) {
      *error = "malformed allow file " + options.allow_path + ": " + why;
      return false;
    }
  }
  return true;
}

bool EvaluateGate(const std::vector<std::string>& reports, const GateOptions& options,
                  const GateInputs& inputs, const ReportSymbolizeOptions* symbolize, Report* report,
                  GateVerdict* verdict, std::vector<std::string>* warnings, std::string* error) {
  std::vector<HangTally> tallies;
  size_t lag_records = 0;
  std::map<std::string, size_t> lag_records_by_role;
  if (!ReadReportsForGate(reports, report, &tallies, &lag_records, error, &lag_records_by_role)) {
    return false;
  }
  // A lag budget of a role wants lag records of that role.
  auto refuse_lag_budget = [&](const std::string& role, const RoleBudgets& b) {
    if (!b.HasLag() || lag_records_by_role.count(role)) return false;
    const std::string flag = std::string(b.max_p99_ms           ? "--max-p99-ms"
                                         : b.max_input_delay_ms ? "--max-input-delay-ms"
                                                                : "--max-slow-passes") +
                             (role == report::kMainRole ? "" : " " + role + "=...");
    *error = flag + " needs lag records" +
             (role == report::kMainRole ? "" : " of thread role " + role) + ", and " +
             (reports.size() == 1 ? reports[0] + " has none" : "the reports have none") +
             " (an agent writes them when it times every pass: under hangwatch run, "
             "or with Config::time_every_pass)";
    return true;
  };
  if (refuse_lag_budget(std::string(report::kMainRole), options.budgets)) return false;
  for (const auto& [role, b] : options.budgets.other_roles) {
    if (refuse_lag_budget(role, b)) return false;
  }
  // Lines the gate could not judge are said, not silently left out of the verdict.
  if (report->skipped_lines > 0) {
    warnings->push_back(std::to_string(report->skipped_lines) + " unreadable line" +
                        (report->skipped_lines == 1 ? "" : "s") +
                        " skipped, not judged; first: " + report->first_error);
  }
  if (report->other_version_records > 0) {
    warnings->push_back(std::to_string(report->other_version_records) + " record" +
                        (report->other_version_records == 1 ? "" : "s") +
                        " of another format_version skipped, not judged: a newer hangwatch "
                        "reads them");
  }
  if (symbolize != nullptr) SymbolizeReport(*symbolize, report, warnings);
  *verdict = ComputeVerdict(
      *report, tallies, lag_records, inputs.has_baseline ? &inputs.baseline : nullptr,
      inputs.baseline_tallies, inputs.allow, options.budgets, lag_records_by_role);
  return true;
}

bool WriteGateFiles(const GateVerdict& verdict, const GateOptions& options,
                    const std::string& suite, double elapsed_s, std::string* error) {
  if (!options.junit.empty()) {
    std::ofstream out(options.junit, std::ios::binary | std::ios::trunc);
    out << FormatGateJunit(verdict, suite, elapsed_s);
    out.close();
    if (!out) {
      *error = "cannot write --junit " + options.junit;
      return false;
    }
  }
  if (!options.markdown.empty()) {
    std::ofstream out(options.markdown, std::ios::binary | std::ios::app);
    out << FormatGateMarkdown(verdict);
    out.close();
    if (!out) {
      *error = "cannot write --markdown " + options.markdown;
      return false;
    }
  }
  return true;
}

}  // namespace hangwatch::tools
