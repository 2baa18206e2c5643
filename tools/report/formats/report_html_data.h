// The data of the HTML report (report_html.cc): a report as one JSON object in which every
// string, frame and stack is stored once and referred to by index, so that a page of 10k hangs
// stays smaller than the JSON Lines it came from and parses in one JSON.parse.
//
// Layout (the page's script, tools/report/formats/html/model.js, is the only reader):
//   strings   ["", ...]: every name, path, signature; index 0 is ""
//   frames    flat, 5 per frame: name, module, file (string indices), line, kind (0 application,
//             1 system, 2 runtime: report/frame_classifier.h). Two frames are one when their
//             name, module, file and line are equal (addresses are not kept)
//   stacks    [[frame, ...]] innermost first, deduplicated over all hangs
//   stack_top the position, in each stack, of its culprit frame (report::FindCulprit)
//   hangs     one array per field, one entry per hang in file order (see the columns in
//             report_html_data.cc); hang i's stacks are [stack, count, cpu_us, ...], its
//             dominant stack `dominant` (-1 without stacks), its cause `cause_kind` and `cause`
//             (its summary; string indices, 0 without a cause) and `cause_threads`, 5 values
//             per thread on the other side of the wait (a lock's owners, every thread of a
//             deadlock): tid, name, what it holds / wants, what it does, stack (-1: none)
//   sources   [frame, first line number, [lines...]]: a few lines around each culprit's source
//             line, when that file can be read where the report is made
//   stalls    start-up stalls; skipped / first_error: unreadable lines of the input
//   lag       the main thread's lag records merged (null without any): passes, percentiles
//             (ms), slow passes, a histogram with one bar per power of two ([upper bound ms,
//             passes]), and the same figures per process and host
//   lag_roles the same for each other thread role (its "role"), never merged with main's
//   hangs.thread, hangs.thread_name: the thread role of each hang ("main" for the main
//             thread) and the thread's own name (string indices)
#ifndef HANGWATCH_TOOLS_REPORT_HTML_DATA_H_
#define HANGWATCH_TOOLS_REPORT_HTML_DATA_H_

#include <string>

#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

struct HtmlReportData {
  std::string data;  // the JSON object above
  // What only the hang on display needs, one line per chunk: `detail_chunk` (a field of
  // `data`) consecutive hangs joined by NUL characters, zlib-compressed and base64-encoded.
  // Each hang is three parts separated by newlines: its timeline as a JSON array [t_ms, stack
  // (position in the hang's stacks, or -1), cpu_us, ...], the scheduler state of each sample
  // (one letter per sample), and FormatText of the hang alone (the rest). Kept apart so that
  // the page parses it only when a hang is first shown, and then inflates that one chunk with
  // DecompressionStream.
  std::string details;
};

// Both are safe to place inside a <script> element: in `data` every '<' is written as \u003c,
// `details` is base64.
HtmlReportData MakeHtmlReportData(const Report& report, const std::string& title);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_HTML_DATA_H_
