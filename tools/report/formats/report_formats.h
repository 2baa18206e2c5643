// The output formats of `hangwatch report` (and the summary `hangwatch run` prints):
//   text    the sections of an Apple crash report, for hangs: header, duration, CPU, class,
//           dominant stack with per-frame sample counts, other stacks, timeline, thread
//           state, binary images with build-ids;
//   json    the records again as JSON Lines (after offline symbolization: now with files/lines);
//   folded  one "outer;...;inner count" line per unique stack, for flamegraph.pl, speedscope,
//           inferno;
//   svg     a self-contained flame graph of all hang samples;
//   trace   Chrome trace-event JSON (Perfetto UI, chrome://tracing): one slice per hang, the
//           sampled stacks nested inside it as a flame chart;
//   pprof   gzipped profile.proto (go tool pprof, Pyroscope, Parca): report_pprof.cc.
//   html    one self-contained interactive page (report_html.cc).
#ifndef HANGWATCH_TOOLS_REPORT_FORMATS_H_
#define HANGWATCH_TOOLS_REPORT_FORMATS_H_

#include <string>

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

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_FORMATS_H_
