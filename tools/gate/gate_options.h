// The flags `hangwatch gate` and `hangwatch run` share (--baseline, --allow, --max-*, --junit,
// --markdown, --github), the files they name (baselines, allow list) read and checked, and the
// files a verdict is written to.
#ifndef HANGWATCH_TOOLS_GATE_OPTIONS_H_
#define HANGWATCH_TOOLS_GATE_OPTIONS_H_

#include <string>
#include <vector>

#include "tools/common/flag_parser.h"
#include "tools/gate/gate_verdict.h"
#include "tools/reader/report_symbolize.h"

namespace hangwatch::tools {

struct GateOptions {
  std::vector<std::string> baselines;
  std::string allow_path;
  GateBudgets budgets;
  std::string junit, markdown;
  bool github = false;
  // A flag that makes `hangwatch run` gate its report was given (--baseline, --allow, --max-*,
  // --markdown, --github).
  bool gating = false;
};

// Declares the shared flags on `parser`. `baseline_lists`: "--baseline A B C" takes every
// following argument up to the next one that starts with '-' (hangwatch gate); otherwise one
// file per --baseline (hangwatch run, whose command follows its options).
void AddGateFlags(FlagParser* parser, bool baseline_lists, GateOptions* options);

// The usage lines of the shared flags (for --help).
extern const char kGateFlagsUsage[];

struct GateInputs {
  bool has_baseline = false;
  // The hangs of every baseline file, one per signature and file (tools/gate/gate_reader.h), with
  // the records each stands for.
  std::vector<HangRecord> baseline;
  std::vector<HangTally> baseline_tallies;
  std::vector<AllowEntry> allow;
};

// Reads the baselines and the allow file. False with one line in *error for a file that is
// missing, unreadable, malformed or (a baseline) empty.
bool LoadGateInputs(const GateOptions& options, GateInputs* inputs, std::string* error);

// What `hangwatch gate` does before it prints: reads the reports into *report (the longest
// hang of each signature, tools/gate/gate_reader.h), refuses a lag
// budget when they hold no lag record, symbolizes them offline (`symbolize` nullptr: as
// recorded) and computes the verdict into *verdict, which points into *report and `inputs`.
// False with one line in *error for bad input. Warnings of the symbolizer go to *warnings.
bool EvaluateGate(const std::vector<std::string>& reports, const GateOptions& options,
                  const GateInputs& inputs, const ReportSymbolizeOptions* symbolize, Report* report,
                  GateVerdict* verdict, std::vector<std::string>* warnings, std::string* error);

// Writes --junit (replaced) and --markdown (appended to, as $GITHUB_STEP_SUMMARY wants). False
// with *error naming the file that could not be written.
bool WriteGateFiles(const GateVerdict& verdict, const GateOptions& options,
                    const std::string& suite, double elapsed_s, std::string* error);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_OPTIONS_H_
