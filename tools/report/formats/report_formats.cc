// The table of `hangwatch report`'s output formats (report_formats.h).
#include "tools/report/formats/report_formats.h"

#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace hangwatch::tools {
namespace {

// The table's one signature, from each format's own (the one tests and the other commands call).
template <auto kFormat>
bool Render(const Report& report, const FormatOptions& options, std::string* out,
            std::string* error) {
  using F = decltype(kFormat);
  if constexpr (std::is_invocable_r_v<bool, F, const Report&, std::string*, std::string*>) {
    return kFormat(report, out, error);
  } else if constexpr (std::is_invocable_r_v<std::string, F, const Report&, const std::string&>) {
    *out = kFormat(report, options.title);
  } else {
    *out = kFormat(report);
  }
  return true;
}

constexpr FormatOutput kText = FormatOutput::kText;
constexpr FormatOutput kBinary = FormatOutput::kBinary;

const ReportFormat kFormats[] = {
    {"text", kText, Render<FormatText>,
     "per hang: process, time, duration, CPU, class, the dominant stack with sample",
     "\ncounts per frame, other stacks, timeline, thread state, binary images"},
    {"json", kText, Render<FormatJsonLines>, "the hangs as JSON Lines again, symbolized"},
    {"folded", kText, Render<FormatFolded>, "folded stacks (flamegraph.pl, speedscope, inferno)"},
    {"svg", kText, Render<FormatSvg>, "a self-contained SVG flame graph of all samples"},
    {"trace", kText, Render<FormatTrace>,
     "Chrome trace-event JSON for Perfetto UI / chrome://tracing"},
    {"pprof", kBinary, Render<FormatPprof>,
     "gzipped profile.proto for go tool pprof, Pyroscope, Parca",
     ":\nsample types samples/count, wall/nanoseconds, cpu/nanoseconds; labels class,\n"
     "signature, host, process, pid; mappings with build-ids",
     "FILE.pb.gz"},
    {"html", kText, Render<FormatHtml>,
     "one self-contained interactive page: summary, sortable hang table, hangs",
     "\ngrouped by signature, per hang a zoomable flame graph, timeline, the culprit's\n"
     "source line and the text report. Source is read only from files that the\n"
     "DWARF of a module of the report names (so not with --no-symbolize), regular\n"
     "files readable by anyone or owned by you (not as root), up to 8 MiB"},
};

// --help: "  " and the name in a column this wide, then the description.
constexpr size_t kNameColumn = 8;

}  // namespace

std::span<const ReportFormat> ReportFormats() { return kFormats; }

const ReportFormat* FindReportFormat(std::string_view name) {
  for (const ReportFormat& f : kFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string ReportFormatNames(std::string_view separator) {
  std::string names;
  for (const ReportFormat& f : kFormats) {
    if (!names.empty()) names += separator;
    names += f.name;
  }
  return names;
}

std::string ReportFormatsHelp() {
  const std::string indent(2 + kNameColumn, ' ');
  std::string help;
  for (const ReportFormat& f : kFormats) {
    std::string text(f.description);
    if (f.output == FormatOutput::kBinary) text += " (binary: use -o)";
    text += f.more_help;
    if (&f == &kFormats[0]) text += " (default)";
    help += "  " + std::string(f.name);
    help.append(f.name.size() < kNameColumn ? kNameColumn - f.name.size() : 1, ' ');
    for (const char c : text) {
      help.push_back(c);
      if (c == '\n') help += indent;
    }
    help.push_back('\n');
  }
  return help;
}

}  // namespace hangwatch::tools
