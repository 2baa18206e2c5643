// `hangwatch report`: reads hang reports and prints them in one of several formats (--help).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/report_reader.h"
#include "tools/reader/report_symbolize.h"
#include "tools/report/formats/report_formats.h"
#include "tools/report/report_command.h"

namespace hangwatch::tools {
namespace {

// The usage around the formats' lines, which the table of formats gives (report_formats.h).
constexpr char kUsageAbout[] =
    "Reads hang reports - JSON Lines files written by the agent (HANGWATCH_REPORT, hangwatch run\n"
    "--report, Config::json_path) or open-hang files left by a process that died during a hang\n"
    "(reported as FATAL) - and prints them:\n";
constexpr char kUsageOptions[] =
    "\n"
    "Frames are symbolized offline by build-id and module offset (functions, files, lines,\n"
    "inlined frames) from the recorded module paths when their build-id matches, else from:\n"
    "  --search PATH      a binary or directory of binaries to match by build-id; repeatable\n"
    "  --debug-dir DIR    separate debug files (DIR/.build-id/xx/rest.debug); repeatable\n"
    "                     (default /usr/lib/debug)\n"
    "  --cache-dir DIR    symbol index cache (default $HANGWATCH_CACHE_DIR, ~/.cache/hangwatch)\n"
    "  --no-cache         neither read nor write cached indexes\n"
    "  --no-symbolize     print what the report recorded\n"
    "Frames of JIT code the record left unnamed (a runtime that writes /tmp/perf-PID.map only\n"
    "at exit, as java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit does) are named\n"
    "from that map while it is there: on the recording host, owned by you, newer than the hang.\n"
    "Other options:\n"
    "  --format F, -f F   output format (above)\n"
    "  --hang N           only the N-th hang of the input (0-based, in file order)\n"
    "  --output FILE, -o FILE   write there instead of stdout\n"
    "  --title TEXT       title of the SVG flame graph or the HTML page\n"
    "  --no-source        no source lines in the HTML page\n"
    "\n"
    "Unreadable lines (torn writes) are skipped and counted. Of several files, one that cannot\n"
    "be read (missing, not a report, gzip-compressed) is skipped with a note on stderr.\n"
    "Exit status: 0, or 2 for bad usage or when no file could be read.\n";

std::string Usage() {
  return "usage: hangwatch report FILE... [--format " + ReportFormatNames("|") + "] [options]\n\n" +
         kUsageAbout + ReportFormatsHelp() + kUsageOptions;
}

constexpr char kCommand[] = "hangwatch report";

int Run(int argc, char** argv) {
  const ReportFormat* format = &ReportFormats().front();
  std::string output, title = "Main-thread hangs";
  long hang = -1;
  bool symbolize = true, source = true;
  ReportSymbolizeOptions options;
  const std::string usage = Usage();
  FlagParser flags(kCommand);
  flags.Help({usage.c_str()});
  flags.Value({"--format", "-f"}, [&](const std::string& v) -> std::string {
    format = FindReportFormat(v);
    if (format == nullptr) return "unknown format '" + v + "' (" + ReportFormatNames(", ") + ")";
    return "";
  });
  flags.String({"--output", "-o"}, &output);
  flags.String({"--title"}, &title);
  flags.Number({"--hang"}, 0, LONG_MAX, &hang, "--hang wants a hang index (0, 1, ...), not '{}'");
  AddSymbolizeFlags(&flags, &options.symbolizer, &symbolize);
  flags.Switch({"--no-source"}, [&] { source = false; });
  if (const std::optional<int> done = flags.Parse(argc, argv)) return *done;
  const std::vector<std::string>& files = flags.positional();
  if (files.empty()) return Fail(kCommand, "no report file given (see hangwatch report --help)");
  if (format->output == FormatOutput::kBinary && output.empty() && isatty(STDOUT_FILENO) == 1) {
    return Fail(kCommand, "--format " + std::string(format->name) + " writes binary: give -o " +
                              std::string(format->binary_file));
  }

  // Of many files (a fleet's), one that cannot be read is skipped with a note; when none can,
  // that is the one error.
  Report report;
  size_t read = 0;
  std::string last_error;
  for (const std::string& f : files) {
    Report one;
    std::string error;
    if (!ReadReportFile(f, &one, &error)) {
      if (files.size() > 1)
        std::fprintf(stderr, "hangwatch report: skipped %s\n", EscapeForTerminal(error).c_str());
      last_error = std::move(error);
      continue;
    }
    ++read;
    MergeReport(std::move(one), &report);
  }
  if (read == 0) {
    return Fail(kCommand, files.size() == 1 ? last_error : "no report file could be read");
  }
  if (hang >= 0) {
    if (static_cast<size_t>(hang) >= report.hangs.size()) {
      return Fail(kCommand, "--hang " + std::to_string(hang) + ": the input has " +
                                std::to_string(report.hangs.size()) + " hang(s)");
    }
    HangRecord one = std::move(report.hangs[static_cast<size_t>(hang)]);
    report.hangs.clear();
    report.hangs.push_back(std::move(one));
  }
  if (symbolize) {
    options.progress = isatty(STDERR_FILENO) == 1;
    std::vector<std::string> warnings;
    SymbolizeReport(options, &report, &warnings);
    for (const std::string& w : warnings) {
      std::fprintf(stderr, "hangwatch report: warning: %s\n", EscapeForTerminal(w).c_str());
    }
  }

  if (!source) report.dwarf_source_files.clear();  // the page reads no file

  std::string text, error;
  if (!format->render(report, FormatOptions{title}, &text, &error)) return Fail(kCommand, error);
  if (output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0)
      return Fail(kCommand, std::string("stdout: ") + std::strerror(errno));
  } else {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) return Fail(kCommand, output + ": cannot write");
  }
  return 0;
}

}  // namespace

const Command kReportCommand = {
    "report",
    "print hang reports: text, json, folded stacks, SVG flame graph, Chrome trace, pprof, HTML",
    Run};
}  // namespace hangwatch::tools
