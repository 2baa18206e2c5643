// The decoder matching report_record.h's encoders: one line of a JSON Lines report
// (docs/report-format.md) back into its record. Used by the tools (the report reader,
// tools/reader/report_reader.h, and the gate's scanner for what it decodes in full) and the
// tests; the agent does not link it (it needs nlohmann_json).
//
// It follows the format's reading rules: unknown fields are ignored, a record of a type this
// build does not know is returned as UnknownRecord (readers count it and skip it), and a line
// that is not a JSON object or a record with a missing or mistyped field is an error for that
// line only. A line without "type" is a hang and a record without "format_version" is of
// version 1 (files of the first agents); versions 1 and 2 are read (2: a record of a thread
// other than main, record_types.h), a record of another version is an UnknownRecord
// (record_types.h has these rules, docs/report-format.md "Reading rules" all of them).
#ifndef HANGWATCH_REPORT_REPORT_DECODE_H_
#define HANGWATCH_REPORT_REPORT_DECODE_H_

#include <string>
#include <string_view>
#include <variant>

#include "hangwatch/hang_record.h"
#include "report/report_record.h"

namespace hangwatch::report {

// A JSON object whose "type" is not one this build reads (a newer writer), or not a string;
// or a record of another "format_version" (record_types.h's rule), whatever its type.
struct UnknownRecord {
  std::string type;            // "" when "type" is not a string
  bool other_version = false;  // "format_version" is an integer this build does not read
};

// Every record a line can hold. A new record type adds its struct here.
using Record = std::variant<UnknownRecord, HangRecord, StartupStall, Lag>;

// Decodes one line (no trailing newline needed). False with a one-line *error when it is not
// a well-formed record.
bool Decode(std::string_view line, Record* out, std::string* error);

// Decodes one line that must be a hang record; any other type is an error.
bool DecodeHang(std::string_view line, HangRecord* out, std::string* error);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_REPORT_DECODE_H_
