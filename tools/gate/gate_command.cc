// `hangwatch gate`: judges reports against a baseline, an allow list and budgets (--help).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tools/common/debug_file_flags.h"
#include "tools/common/terminal_text.h"
#include "tools/gate/gate_command.h"
#include "tools/gate/gate_options.h"
#include "tools/gate/gate_output.h"

namespace hangwatch::tools {
namespace {

constexpr int kExitFailed = 3;

constexpr char kUsageHead[] =
    "usage: hangwatch gate REPORT... [--baseline FILE...] [--allow FILE] [budgets]\n"
    "                      [--junit FILE] [--markdown FILE] [--github] [--format text|json]\n"
    "\n"
    "Judges the hangs and the run-loop lag of REPORTs (JSON Lines files, as hangwatch report\n"
    "reads them) for a CI gate. Hangs are grouped by signature (the function names of their\n"
    "application frames: the same across builds) and sorted into new, known (in a baseline)\n"
    "and fixed (in a baseline, not seen). New hangs fail the gate unless an allow-list entry\n"
    "names them or they stay within the hang budgets; known and allowed hangs never fail it\n"
    "but are listed. Lag budgets apply to the lag records of all REPORTs added together.\n"
    "\n"
    "Exit status: 0 passed, 3 failed, 2 bad usage or bad input (a missing, empty or malformed\n"
    "file; a lag budget for reports without lag records).\n"
    "\n";

constexpr char kUsageTail[] =
    "  --junit FILE       JUnit XML: one test case per signature, named after its culprit\n"
    "  --format F         text (default) or json: {\"passed\", \"new\", \"known\", \"fixed\",\n"
    "                     \"violations\", ...} on stdout\n"
    "Frames are symbolized offline, as by hangwatch report, so that culprits have a source\n"
    "line: --search PATH, --debug-dir DIR, --cache-dir DIR, --no-cache, --no-symbolize.\n"
    "--baseline takes the files that follow it up to the next option: put REPORTs first.\n"
    "The --github annotations go to stdout (to stderr with --format json).\n";

constexpr char kCommand[] = "hangwatch gate";

int Run(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  GateOptions options;
  std::string format = "text";
  bool symbolize = true;
  ReportSymbolizeOptions symbolize_options;
  FlagParser flags(kCommand);
  flags.Help({kUsageHead, kGateFlagsUsage, kUsageTail});
  AddGateFlags(&flags, /*baseline_lists=*/true, &options);
  flags.Value({"--format"}, [&](const std::string& v) -> std::string {
    if (v != "text" && v != "json") return "unknown format '" + v + "' (text, json)";
    format = v;
    return "";
  });
  flags.MissingValue("--format wants text or json");
  AddSymbolizeFlags(&flags, &symbolize_options.symbolizer, &symbolize);
  if (const std::optional<int> done = flags.Parse(argc, argv)) return *done;
  const std::vector<std::string>& reports = flags.positional();
  if (reports.empty()) return Fail(kCommand, "no report file given (see hangwatch gate --help)");

  GateInputs inputs;
  Report report;
  GateVerdict verdict;
  std::vector<std::string> warnings;
  std::string error;
  symbolize_options.progress = symbolize && isatty(STDERR_FILENO) == 1;
  symbolize_options.command = "gate";
  if (!LoadGateInputs(options, &inputs, &error) ||
      !EvaluateGate(reports, options, inputs, symbolize ? &symbolize_options : nullptr, &report,
                    &verdict, &warnings, &error)) {
    return Fail(kCommand, error);
  }
  for (const std::string& w : warnings) {
    std::fprintf(stderr, "hangwatch gate: warning: %s\n", EscapeForTerminal(w).c_str());
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string suite;
  for (const std::string& r : reports) suite += (suite.empty() ? "" : " ") + r;
  if (!WriteGateFiles(verdict, options, "hangwatch gate " + suite, elapsed, &error)) {
    return Fail(kCommand, error);
  }
  if (options.github) {
    const char* workspace = std::getenv("GITHUB_WORKSPACE");
    const std::string lines = FormatGateGithub(verdict, workspace ? workspace : "");
    std::fwrite(lines.data(), 1, lines.size(), format == "json" ? stderr : stdout);
  }
  const std::string text = format == "json" ? FormatGateJson(verdict) : FormatGateText(verdict, 50);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0)
    return Fail(kCommand, std::string("stdout: ") + std::strerror(errno));
  return verdict.passed ? 0 : kExitFailed;
}

}  // namespace

const Command kGateCommand = {
    "gate", "CI gate: new / known / fixed hangs against a baseline, allow list, budgets", Run};
}  // namespace hangwatch::tools
