// `hangwatch report`: reads hang reports and prints them in one of several formats (--help).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_value.h"
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

int Fail(const std::string& message) {
  std::fprintf(stderr, "hangwatch report: %s\n", EscapeForTerminal(message).c_str());
  return kExitUsage;
}

int Run(int argc, char** argv) {
  std::vector<std::string> files;
  const ReportFormat* format = &ReportFormats().front();
  std::string output, title = "Main-thread hangs";
  long hang = -1;
  bool symbolize = true, source = true;
  ReportSymbolizeOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string v;
    auto value = [&](std::string_view flag, std::string_view alias = {}) {
      return FlagValue(argc, argv, &i, flag, &v) ||
             (!alias.empty() && FlagValue(argc, argv, &i, alias, &v));
    };
    if (a == "--help" || a == "-h") {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    } else if (value("--format", "-f")) {
      format = FindReportFormat(v);
      if (format == nullptr) {
        return Fail("unknown format '" + v + "' (" + ReportFormatNames(", ") + ")");
      }
    } else if (value("--output", "-o")) {
      output = v;
    } else if (value("--title")) {
      title = v;
    } else if (value("--hang")) {
      char* end = nullptr;
      errno = 0;
      hang = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno != 0 || hang < 0) {
        return Fail("--hang wants a hang index (0, 1, ...), not '" + v + "'");
      }
    } else if (ParseDebugFileFlag(argc, argv, &i, kSearchFlag | kDebugDirFlag | kCacheFlags,
                                  &options.symbolizer)) {
    } else if (a == "--no-symbolize") {
      symbolize = false;
    } else if (a == "--no-source") {
      source = false;
    } else if (a == "--") {
      for (++i; i < argc; ++i) files.emplace_back(argv[i]);
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail("unknown option '" + std::string(a) +
                  "' or missing value (see hangwatch report --help)");
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) return Fail("no report file given (see hangwatch report --help)");
  if (format->output == FormatOutput::kBinary && output.empty() && isatty(STDOUT_FILENO) == 1) {
    return Fail("--format " + std::string(format->name) + " writes binary: give -o " +
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
    return Fail(files.size() == 1 ? last_error : "no report file could be read");
  }
  if (hang >= 0) {
    if (static_cast<size_t>(hang) >= report.hangs.size()) {
      return Fail("--hang " + std::to_string(hang) + ": the input has " +
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
  if (!format->render(report, FormatOptions{title}, &text, &error)) return Fail(error);
  if (output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) return Fail(std::string("stdout: ") + std::strerror(errno));
  } else {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) return Fail(output + ": cannot write");
  }
  return 0;
}

}  // namespace

const Command kReportCommand = {
    "report",
    "print hang reports: text, json, folded stacks, SVG flame graph, Chrome trace, pprof, HTML",
    Run};
}  // namespace hangwatch::tools
