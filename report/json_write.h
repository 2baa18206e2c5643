// The encoders' pieces of JSON (report_encode.cc defines them): the format's one string
// escaping, integers, and `"key":`. Shared by the encoders of report_encode.cc and of a hang's
// context (context_encode.cc), so that every string of every record is escaped alike.
#ifndef HANGWATCH_REPORT_JSON_WRITE_H_
#define HANGWATCH_REPORT_JSON_WRITE_H_

#include <cstdint>
#include <string>

#include "hangwatch/hang_record.h"

namespace hangwatch::report::json_write {

// `"s"`, escaped; bytes that are not UTF-8 become U+FFFD (report/utf8.h).
void AppendString(std::string* out, const std::string& s);
void AppendInt(std::string* out, int64_t v);
void AppendUint(std::string* out, uint64_t v);
// `"key":`, after a ',' unless first.
void Key(std::string* out, const char* key, bool first = false);

}  // namespace hangwatch::report::json_write

namespace hangwatch::report {

// The members of a hang after "monitor_pause_us" (context_encode.cc): "context", "input",
// "perceived", "not_responding" and "queued_ms", each only when known, so that a hang
// without them keeps the bytes it had before they existed.
void AppendContextFields(std::string* out, const HangRecord& r);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_JSON_WRITE_H_
