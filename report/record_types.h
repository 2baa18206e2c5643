// The names every writer and reader of a JSON Lines report (docs/report-format.md) agrees on:
// the format version, the record types and the hang classes, with the rules that turn a line's
// top-level "type" and "format_version" into what the line is. The encoder, the decoder
// (report_decode.h) and the fast scanners of `gate` and `top` all read them from here, so that
// a reader cannot call a line a hang that another calls bad.
//
// Header only, standard library only: linked into the agent as well as the tools.
#ifndef HANGWATCH_REPORT_RECORD_TYPES_H_
#define HANGWATCH_REPORT_RECORD_TYPES_H_

#include <cstdint>
#include <string_view>

namespace hangwatch::report {

// The "format_version" every record carries. A record without one is of version 1 (the first
// agents wrote none).
inline constexpr int kFormatVersion = 1;

// The values of "type". A line without "type" is a hang (files of the first agents).
inline constexpr std::string_view kHangType = "hang";
inline constexpr std::string_view kStartupStallType = "startup_stall";
inline constexpr std::string_view kLagType = "lag";

// What a line's "type" names, for this build.
enum class RecordKind {
  kHang,
  kStartupStall,
  kLag,
  kUnknown,  // a type this build does not know (a newer writer), or "type" not a string
};

// `type`: the value of "type", or nullptr-like absent (has_type false).
constexpr RecordKind KindOfType(bool has_type, std::string_view type) {
  if (!has_type || type == kHangType) return RecordKind::kHang;
  if (type == kLagType) return RecordKind::kLag;
  if (type == kStartupStallType) return RecordKind::kStartupStall;
  return RecordKind::kUnknown;
}

// The rule for "format_version": absent is this version; an integer other than kFormatVersion
// is another version (the line is counted and skipped, never read as this version's record).
// A value that is not an integer makes the line bad, as any mistyped field does.
constexpr bool IsThisVersion(bool has_version, int64_t version) {
  return !has_version || version == kFormatVersion;
}

// The values of a hang's "class" (HangClass, include/hangwatch/hang_record.h); any other value
// reads as "unknown".
inline constexpr std::string_view kClassBusy = "busy";
inline constexpr std::string_view kClassBlocked = "blocked";
inline constexpr std::string_view kClassMixed = "mixed";
inline constexpr std::string_view kClassUnknown = "unknown";

// The values of a hang's "phase" (HangPhase). Absent, or any other value, reads as "run".
inline constexpr std::string_view kPhaseRun = "run";
inline constexpr std::string_view kPhaseStartup = "startup";
inline constexpr std::string_view kPhaseShutdown = "shutdown";

// The JSON type of a top-level field's value, as a fast scanner sees it from its first bytes:
// an integer (digits, optionally after '-'), any number, a string, a boolean, an object, an
// array.
enum class ValueKind : uint8_t { kInteger, kNumber, kString, kBoolean, kObject, kArray };

// The top-level fields of each record type (docs/report-format.md): the JSON type of each and
// whether it is required. A line whose required fields are all present and whose known fields
// all have their types is that record as far as the top level goes; what is inside the arrays
// and objects (frames, timeline entries, modules, buckets) is checked by the readers that use
// it. Fields not listed (a lag record's figures, written for people) are not read.
struct TopLevelField {
  std::string_view name;
  ValueKind kind;
  bool required;
};
// In the order the encoder writes them (a scanner that expects the next row finds each field
// of an agent's line at the first try).
inline constexpr TopLevelField kHangFields[] = {
    {"pid", ValueKind::kInteger, true},
    {"tid", ValueKind::kInteger, true},
    {"process", ValueKind::kString, false},
    {"process_name", ValueKind::kString, false},
    {"host", ValueKind::kString, false},
    {"labels", ValueKind::kObject, false},
    {"hang_id", ValueKind::kInteger, false},
    {"start_unix_ms", ValueKind::kInteger, true},
    {"duration_ms", ValueKind::kInteger, true},
    {"cpu_ms", ValueKind::kInteger, true},
    {"cpu_percent", ValueKind::kInteger, false},
    {"class", ValueKind::kString, false},
    {"stopped_ms", ValueKind::kInteger, false},
    {"threshold_ms", ValueKind::kInteger, false},
    {"sample_interval_ms", ValueKind::kInteger, false},
    {"samples", ValueKind::kInteger, true},
    {"failed_samples", ValueKind::kInteger, false},
    {"dropped_stacks", ValueKind::kInteger, false},
    {"fatal", ValueKind::kBoolean, false},
    {"phase", ValueKind::kString, false},
    {"fingerprint", ValueKind::kString, false},
    {"signature", ValueKind::kString, false},
    {"culprit", ValueKind::kObject, false},  // or null
    {"dominant_stack", ValueKind::kInteger, false},
    {"stacks", ValueKind::kArray, true},
    {"timeline", ValueKind::kArray, false},
    {"timeline_truncated", ValueKind::kBoolean, false},
    {"modules", ValueKind::kArray, false},
    {"cause", ValueKind::kObject, false},  // or null
    {"monitor_pause_us", ValueKind::kInteger, false},
};

inline constexpr TopLevelField kLagFields[] = {
    {"pid", ValueKind::kInteger, true},         {"start_unix_ms", ValueKind::kInteger, true},
    {"end_unix_ms", ValueKind::kInteger, true}, {"busy_ms", ValueKind::kNumber, true},
    {"buckets", ValueKind::kArray, true},       {"process_name", ValueKind::kString, false},
    {"host", ValueKind::kString, false},        {"labels", ValueKind::kObject, false},
    {"slow_passes", ValueKind::kObject, false},
};

inline constexpr TopLevelField kStartupStallFields[] = {
    {"pid", ValueKind::kInteger, true},           {"start_unix_ms", ValueKind::kInteger, true},
    {"duration_ms", ValueKind::kInteger, true},   {"process", ValueKind::kString, false},
    {"threshold_ms", ValueKind::kInteger, false},
};

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_RECORD_TYPES_H_
