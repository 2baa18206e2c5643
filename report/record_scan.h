// The fast scanner of a JSON Lines report (docs/report-format.md): what one line is, by the
// format's reading rules, and the raw values of its top-level fields, without decoding the line
// (the stacks, timeline and modules are skipped, their brackets and strings matched). Every
// reader that does not need a whole record reads through it: `gate` (which decodes only the
// longest hang of each signature), `top`, the Prometheus exporter and `run`'s budget check;
// `report` and whatever needs the frames decode with report_decode.h, which puts every line in
// the same class as far as the top level goes (tests/tools/reader_conformance_test.cc).
//
// Hand-written and standard library only, so that every command links it, the static CLI too;
// 64 bytes at a time, strings found by the parity of the quotes before each byte (about 2.3 GB/s
// on one core over bench/gen_hang_reports.py's hangs, 3x memchr's line count: BM_Gate/scan_lines
// and scan_floor in bench/gate_bench.cc).
#ifndef HANGWATCH_REPORT_RECORD_SCAN_H_
#define HANGWATCH_REPORT_RECORD_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "report/record_types.h"

namespace hangwatch::report {

// What a line is, by the reading rules.
enum class LineKind : uint8_t {
  kEmpty,         // white space only
  kBad,           // not one JSON object, or a known record with a field missing or mistyped
  kOtherVersion,  // a record of a format_version this build does not read (whatever its type)
  kUnknownType,   // a record of a type this build does not know, or whose type is not a string
  kHang,
  kLag,
  kStartupStall,
};

// Every top-level key the scanner keeps: "type", "format_version" and the fields of the record
// types' tables (record_types.h). ScannedLine::values is indexed by a key's row here (KeyIndex).
inline constexpr std::string_view kScanKeys[] = {
    "type",
    "format_version",
    "pid",
    "tid",
    "thread",
    "process",
    "process_name",
    "host",
    "labels",
    "hang_id",
    "start_unix_ms",
    "duration_ms",
    "cpu_ms",
    "cpu_percent",
    "class",
    "stopped_ms",
    "threshold_ms",
    "sample_interval_ms",
    "samples",
    "failed_samples",
    "dropped_stacks",
    "fatal",
    "phase",
    "fingerprint",
    "signature",
    "culprit",
    "dominant_stack",
    "stacks",
    "timeline",
    "timeline_truncated",
    "modules",
    "cause",
    "monitor_pause_us",
    "context",
    "input",
    "perceived",
    "not_responding",
    "queued_ms",
    "end_unix_ms",
    "busy_ms",
    "buckets",
    "slow_passes",
    "threads_not_watched",
    "max_ms",
    "delay",
};
inline constexpr size_t kScanKeyCount = std::size(kScanKeys);

// The row of `key` in kScanKeys, kScanKeyCount when it is not there.
constexpr size_t KeyIndex(std::string_view key) {
  for (size_t i = 0; i < kScanKeyCount; ++i) {
    if (kScanKeys[i] == key) return i;
  }
  return kScanKeyCount;
}

// One scanned line: its kind and the raw text of each kept top-level value as written (a string
// with its quotes and escapes, an object with its braces); empty when absent. The views point
// into the line.
struct ScannedLine {
  LineKind kind = LineKind::kBad;
  std::string_view values[kScanKeyCount];

  std::string_view operator[](size_t key) const { return values[key]; }
};

// Scans one line (without its newline): one JSON object and white space, nothing else; its
// "format_version", "type" and the top-level fields of its record type: the required ones
// present, each known one of its JSON type and in the range the decoder accepts (ValueKind).
// Scalars at the top level are checked by JSON's grammar; inside arrays and objects only
// strings, brackets and the characters of scalars (the reading rules' rule 5).
LineKind ScanLine(std::string_view line, ScannedLine* out);

// The raw value that starts at p (no white space before it): the position after it, nullptr
// when it is malformed or the line ends inside it. `e` is the end of the line.
const char* SkipJsonValue(const char* p, const char* e);

// Calls fn(key, raw_value) for each member of a raw object value that ScanLine has checked.
// Keys are raw (escapes not decoded).
template <typename Fn>
void ForEachMember(std::string_view object, Fn&& fn);

// Calls fn(raw_value) for each element of a raw array value that ScanLine has checked.
template <typename Fn>
void ForEachElement(std::string_view array, Fn&& fn);

// The thread role of a scanned hang or lag line: its "thread"'s "role", "main" when it has none
// (record_types.h's RoleOrMain), into *scratch only when needed.
std::string_view ScannedRole(const ScannedLine& line, std::string* scratch);

// The one decimal parser of the readers: an optional '-' (ParseInt64 only) and digits, nothing
// else; false when out of range.
bool ParseUint64(std::string_view digits, uint64_t* out);
bool ParseInt64(std::string_view digits, int64_t* out);

// "0x1234" (or "0X...", 1 to 16 hex digits) -> 0x1234, as the decoder reads offsets.
bool ParseHexString(std::string_view s, uint64_t* out);

// A raw string value (with its quotes) as text: escapes decoded and bytes that are not UTF-8
// replaced by U+FFFD (report/utf8.h), into *scratch only when needed. "" for a value that is not
// a string.
std::string_view StringValue(std::string_view raw, std::string* scratch);

// --- inline definitions

namespace scan_internal {
inline bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\r'; }
inline const char* SkipWs(const char* p, const char* e) {
  while (p < e && IsWs(*p)) ++p;
  return p;
}
const char* SkipString(const char* p, const char* e);
}  // namespace scan_internal

template <typename Fn>
void ForEachMember(std::string_view object, Fn&& fn) {
  using scan_internal::SkipWs;
  const char* p = object.data();
  const char* e = p + object.size();
  p = SkipWs(p, e);
  if (p >= e || *p != '{') return;
  p = SkipWs(p + 1, e);
  while (p < e && *p == '"') {
    const char* key_end = scan_internal::SkipString(p, e);
    if (key_end == nullptr) return;
    const std::string_view key(p + 1, static_cast<size_t>(key_end - p - 2));
    p = SkipWs(key_end, e);
    if (p >= e || *p != ':') return;
    p = SkipWs(p + 1, e);
    const char* value_end = SkipJsonValue(p, e);
    if (value_end == nullptr) return;
    fn(key, std::string_view(p, static_cast<size_t>(value_end - p)));
    p = SkipWs(value_end, e);
    if (p < e && *p == ',') p = SkipWs(p + 1, e);
  }
}

template <typename Fn>
void ForEachElement(std::string_view array, Fn&& fn) {
  using scan_internal::SkipWs;
  const char* p = array.data();
  const char* e = p + array.size();
  p = SkipWs(p, e);
  if (p >= e || *p != '[') return;
  p = SkipWs(p + 1, e);
  while (p < e && *p != ']') {
    const char* value_end = SkipJsonValue(p, e);
    if (value_end == nullptr) return;
    fn(std::string_view(p, static_cast<size_t>(value_end - p)));
    p = SkipWs(value_end, e);
    if (p < e && *p == ',') p = SkipWs(p + 1, e);
  }
}

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_RECORD_SCAN_H_
