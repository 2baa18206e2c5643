// The output formats of `hangwatch report` (and the summary `hangwatch run` and `hangwatch gate`
// print), one file each (report_<name>.cc, which says what the format holds), behind one table
// (report_formats.cc) that `report`'s usage text, its --format check, its dispatch and its
// refusal to write binary to a terminal all read. Adding a format: its file with its Format
// function (declared below), and one row in the table.
#ifndef HANGWATCH_TOOLS_REPORT_FORMATS_H_
#define HANGWATCH_TOOLS_REPORT_FORMATS_H_

#include <span>
#include <string>
#include <string_view>

#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

std::string FormatText(const Report& report);
// A short form for `hangwatch run`'s stderr: per hang, the header lines and the top of the
// dominant stack.
std::string FormatSummary(const Report& report, size_t max_frames);
std::string FormatJsonLines(const Report& report);
std::string FormatFolded(const Report& report);
std::string FormatSvg(const Report& report, const std::string& title);
std::string FormatTrace(const Report& report);
// Gzipped profile.proto bytes; false with *error when it cannot be encoded.
bool FormatPprof(const Report& report, std::string* out, std::string* error);
std::string FormatHtml(const Report& report, const std::string& title);

// What the command's flags tell the formats; each reads what it needs.
struct FormatOptions {
  std::string title;  // --title: the SVG flame graph's, the HTML page's
};

// Binary output is refused on a terminal without -o.
enum class FormatOutput { kText, kBinary };

// One row of the table: one value of `--format`.
struct ReportFormat {
  std::string_view name;
  FormatOutput output;
  // The output in *out, or false with *error (one line, for "hangwatch report: ERROR").
  bool (*render)(const Report& report, const FormatOptions& options, std::string* out,
                 std::string* error);
  // --help, after the name: the first line; for a binary format " (binary: use -o)" follows.
  std::string_view description;
  // --help: the rest, as printed; each '\n' starts a line indented under the description. The
  // lines are broken by hand: no one width breaks them all where the usage always has.
  std::string_view more_help = {};
  // Binary formats: the file "give -o FILE..." suggests when stdout is a terminal.
  std::string_view binary_file = {};
};

// Every format, in --help order; the first is the default.
std::span<const ReportFormat> ReportFormats();
// nullptr for a name that is no format.
const ReportFormat* FindReportFormat(std::string_view name);
// The names joined by `separator`: "text|json|..." for the usage, "text, json, ..." for errors.
std::string ReportFormatNames(std::string_view separator);
// --help's lines for the formats: "  NAME    DESCRIPTION...", the default marked "(default)".
std::string ReportFormatsHelp();

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_FORMATS_H_
