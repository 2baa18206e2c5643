// Reading hang reports: JSON Lines files (docs/report-format.md) and open-hang files (a hang
// that was still open when its process died, hang/open_hang/open_hang_file.h), for `hangwatch
// report` and `hangwatch run`.
//
// Readers follow the format's rules: a line that is not a JSON object (a torn write) or not a
// well-formed record is skipped without invalidating the others, unknown fields are ignored,
// records of unknown types are counted and skipped. Only a file in which no line at all is a
// valid record is malformed.
#ifndef HANGWATCH_TOOLS_REPORT_READER_H_
#define HANGWATCH_TOOLS_REPORT_READER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hangwatch/hang_record.h"
#include "report/report_record.h"

namespace hangwatch::tools {

// {"type":"startup_stall"}: the main thread reached its event loop late (preload shim). The
// record types and their codec are report/'s (report_record.h, report_decode.h).
using report::StartupStall;
// {"type":"lag"}: the run-loop pass durations of one interval of one process.
using report::Lag;

struct Report {
  std::vector<HangRecord> hangs;  // in file order
  std::vector<StartupStall> startup_stalls;
  std::vector<Lag> lags;       // in file order
  size_t skipped_lines = 0;    // not a JSON object, or a record with missing / mistyped fields
  size_t unknown_records = 0;  // valid JSON objects of another type, or of another version
  // Of those, records of another format_version (a newer agent's): told, never silently dropped.
  size_t other_version_records = 0;
  std::string first_error;  // why the first skipped line was skipped ("line N: ...")
  // The source files that the DWARF line tables of the report's modules name for its frames:
  // filled by offline symbolization (report_symbolize.h). The HTML page reads source only from
  // these: a report's own `file` fields are not trusted (a hostile one may name /etc/shadow).
  std::set<std::string> dwarf_source_files;
  // By thread role: the longest time input waited on the display during a hang of that role
  // (a hang's input.oldest_ms), of every hang read, also those a reader keeps only counted
  // (`hangwatch gate` keeps the longest hang of each signature). Absent: no hang said.
  std::map<std::string, uint64_t> input_waited_ms;
};

// Notes `h`'s input wait in report->input_waited_ms (its role's longest).
void NoteInputWait(const HangRecord& h, Report* report);

// Parses JSON Lines one line at a time into a Report, numbering the lines across everything it
// is given ("line N" in Report::first_error): ParseJsonLines feeds it one text, `hangwatch run`
// the lines of each file its report went to (tools/reader/line_reader.h).
class JsonLinesParser {
 public:
  explicit JsonLinesParser(Report* out) : out_(out) {}
  // One line, without its '\n'.
  void Add(std::string_view line);
  // A line the LineReader did not keep (longer than kMaxLineBytes): skipped, and said.
  void AddTooLong();
  // False (with *error) when it was given content but not a single valid record.
  bool Finish(std::string* error) const;

 private:
  Report* out_;
  size_t line_no_ = 0, valid_ = 0, nonempty_ = 0;
};

// Parses one JSON Lines text. Returns false (with *error) only when the text has content but
// not a single valid record.
bool ParseJsonLines(std::string_view text, Report* out, std::string* error);

// Parses one line into a hang record. False with *error when it is not one.
bool ParseHangLine(std::string_view line, HangRecord* out, std::string* error);

// Reads a report file: JSON Lines, or an open-hang file (recognized by its magic), whose open
// hang becomes one fatal hang. False with a one-line *error when it cannot be read or is
// malformed.
bool ReadReportFile(const std::string& path, Report* out, std::string* error);

// Appends the records of `from` to `into`.
void MergeReport(Report&& from, Report* into);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_REPORT_READER_H_
