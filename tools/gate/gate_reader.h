// Reading reports for the gate, which needs of most hang records only their signature and
// duration: each line is scanned (its JSON structure checked, its top-level "type",
// "signature" and "duration_ms" read) without being decoded, hangs are tallied per signature,
// and only the longest hang of each signature is decoded in full (report/report_decode.h), to
// name and symbolize it. Lag and start-up stall records, open-hang files and hang records
// without a signature are decoded in full. A hundred thousand hangs of a thousand signatures
// cost a thousand decodes (bench/gate_bench.cc).
//
// Lines are classified by the format's reading rules (docs/report-format.md): only a line the
// scan finds plainly a hang (format_version absent or 1, every top-level field of
// report::kHangFields of its type, the required ones present) is tallied without decoding;
// every other line goes to the decoder. What remains different from tools/reader/
// report_reader.h: a hang whose nested values (frames, timeline, modules) or integer ranges are
// malformed is counted, where the report reader skips it; unless it is the longest of its
// signature, then every file is read again with the report reader.
#ifndef HANGWATCH_TOOLS_GATE_READER_H_
#define HANGWATCH_TOOLS_GATE_READER_H_

#include <string>
#include <string_view>
#include <vector>

#include "tools/gate/gate_verdict.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// The top-level fields of one JSON Lines record that the gate reads without decoding it.
struct ScannedLine {
  bool has_type = false;
  std::string_view type;       // "" when absent (a hang: files of the first agents), not a
                               // string or with escapes
  std::string_view signature;  // "" when absent; raw (a value with escapes is not taken)
  std::string_view phase;      // "" when absent (the run phase); raw, as `signature`
  bool has_duration = false;
  uint64_t duration_ms = 0;
  // "format_version" absent or 1 (report/record_types.h); false also when it is anything else.
  bool this_version = true;
  // The top-level fields of a hang (report::kHangFields): the required ones present, every
  // known one with its type. Only meaningful for a hang.
  bool hang_fields_ok = false;
};

// Checks that `line` is one JSON object (strings, nesting and brackets; numbers and literals
// only by their characters), reads its top-level "type", "signature" and "duration_ms", and
// checks "format_version" and the hang's top-level fields by their first characters.
// False when it is not a JSON object.
bool ScanRecordLine(std::string_view line, ScannedLine* out);

// Reads report files (JSON Lines or open-hang files) into *out, whose hangs are one record per
// signature and phase (shutdown or not: the gate judges them apart; the longest) followed by every
// hang without a signature, with *tallies parallel to out->hangs. The lag records are added
// together into out->lags[0] as they are read; *lag_records counts them. False with a one-line
// *error for a file that is missing, unreadable, or has content but no valid record.
bool ReadReportsForGate(const std::vector<std::string>& paths, Report* out,
                        std::vector<HangTally>* tallies, size_t* lag_records, std::string* error);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_READER_H_
