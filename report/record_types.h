// The names every writer and reader of a JSON Lines report (docs/report-format.md) agrees on:
// the format version, the record types and the hang classes, with the rules that turn a line's
// top-level "type" and "format_version" into what the line is. The encoder, the decoder
// (report_decode.h) and the fast scanner (record_scan.h) all read them from here, so that
// a reader cannot call a line a hang that another calls bad.
//
// Header only, standard library only: linked into the agent as well as the tools.
#ifndef HANGWATCH_REPORT_RECORD_TYPES_H_
#define HANGWATCH_REPORT_RECORD_TYPES_H_

#include <cstdint>
#include <string_view>

namespace hangwatch::report {

// The "format_version" every record carries. A record without one is of version 1 (the first
// agents wrote none). Version 2 is the same format, written for the records (hangs, lag) of a
// watched thread whose role is not "main" (hangwatch/threads.h): readers of version 1 only skip
// them, so that they never add a render thread's passes or hangs to the main thread's figures.
// The records of the main thread stay version 1. This build reads both.
inline constexpr int kFormatVersion = 1;
inline constexpr int kThreadFormatVersion = 2;

// The role of the thread that called Start() ("thread": {"role"}); a record without "thread",
// or with an empty role, is of that thread (agents that watched only it).
inline constexpr std::string_view kMainRole = "main";

// The role a reader groups and judges a record under: `role`, "main" when empty.
constexpr std::string_view RoleOrMain(std::string_view role) {
  return role.empty() ? kMainRole : role;
}

// The "format_version" a writer gives a record of the thread watched under `role`.
constexpr int FormatVersionForRole(std::string_view role) {
  return RoleOrMain(role) == kMainRole ? kFormatVersion : kThreadFormatVersion;
}

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

// The rule for "format_version": absent is version 1; 1 and 2 are the versions this build reads;
// any other integer is another version (the line is counted and skipped, never read as a record
// of these versions). A value that is not an integer makes the line bad, as any mistyped field
// does.
constexpr bool IsReadableVersion(bool has_version, int64_t version) {
  return !has_version || version == kFormatVersion || version == kThreadFormatVersion;
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

// The JSON type of a top-level field's value and the range the decoder accepts for it (the C++
// type of its member): an integer of one of four ranges, any number, a lag's busy milliseconds
// (a number from 0 to 1e15), a string, a boolean, an object, an object of strings (labels), an
// array, a culprit (an object with its fields' types, or null), an object or null (the cause), a
// hang's context and input (objects with their members' types: report/context_scan.h).
enum class ValueKind : uint8_t {
  kInt64,
  kInt32,
  kUint64,
  kUint32,
  kNumber,
  kBusyMs,
  kString,
  kBoolean,
  kObject,
  kLabels,
  kArray,
  kCulprit,
  kObjectOrNull,
  kThread,
  kContext,
  kInput,
};

// The top-level fields of each record type (docs/report-format.md): the JSON type of each and
// whether it is required. A line whose required fields are all present and whose known fields
// all have their types is that record as far as the top level goes; what is inside the arrays
// and objects (frames, timeline entries, modules, buckets, the cause) is checked by the readers
// that use it. Fields not listed (a lag record's figures, written for people) are not read.
struct TopLevelField {
  std::string_view name;
  ValueKind kind;
  bool required;
};
// In the order the encoder writes them (a scanner that expects the next row finds each field
// of an agent's line at the first try).
inline constexpr TopLevelField kHangFields[] = {
    {"pid", ValueKind::kInt64, true},
    {"tid", ValueKind::kInt64, true},
    {"thread", ValueKind::kThread, false},
    {"process", ValueKind::kString, false},
    {"process_name", ValueKind::kString, false},
    {"host", ValueKind::kString, false},
    {"labels", ValueKind::kLabels, false},
    {"hang_id", ValueKind::kUint64, false},
    {"start_unix_ms", ValueKind::kInt64, true},
    {"duration_ms", ValueKind::kUint64, true},
    {"cpu_ms", ValueKind::kUint64, true},
    {"cpu_percent", ValueKind::kUint32, false},
    {"class", ValueKind::kString, false},
    {"stopped_ms", ValueKind::kUint64, false},
    {"threshold_ms", ValueKind::kUint32, false},
    {"sample_interval_ms", ValueKind::kUint32, false},
    {"samples", ValueKind::kUint32, true},
    {"failed_samples", ValueKind::kUint32, false},
    {"dropped_stacks", ValueKind::kUint32, false},
    {"fatal", ValueKind::kBoolean, false},
    {"phase", ValueKind::kString, false},
    {"fingerprint", ValueKind::kString, false},
    {"signature", ValueKind::kString, false},
    {"culprit", ValueKind::kCulprit, false},
    {"dominant_stack", ValueKind::kInt32, false},
    {"stacks", ValueKind::kArray, true},
    {"timeline", ValueKind::kArray, false},
    {"timeline_truncated", ValueKind::kBoolean, false},
    {"modules", ValueKind::kArray, false},
    {"cause", ValueKind::kObjectOrNull, false},
    {"monitor_pause_us", ValueKind::kUint64, false},
    // What the pass was serving and whether a person waited: each written only when known.
    {"context", ValueKind::kContext, false},
    {"input", ValueKind::kInput, false},
    {"perceived", ValueKind::kBoolean, false},
    {"not_responding", ValueKind::kBoolean, false},
    {"queued_ms", ValueKind::kInt64, false},
};

inline constexpr TopLevelField kLagFields[] = {
    {"pid", ValueKind::kInt64, true},
    {"start_unix_ms", ValueKind::kInt64, true},
    {"end_unix_ms", ValueKind::kInt64, true},
    {"busy_ms", ValueKind::kBusyMs, true},
    {"buckets", ValueKind::kArray, true},
    {"process_name", ValueKind::kString, false},
    {"host", ValueKind::kString, false},
    {"labels", ValueKind::kLabels, false},
    {"slow_passes", ValueKind::kObject, false},
    {"thread", ValueKind::kThread, false},
    {"threads_not_watched", ValueKind::kUint64, false},
    // Read by `top` for its input-delay line: the interval's longest pass and its queued +
    // running histogram (with the longest delay in it).
    {"max_ms", ValueKind::kNumber, false},
    {"delay", ValueKind::kObject, false},
};

inline constexpr TopLevelField kStartupStallFields[] = {
    {"pid", ValueKind::kInt64, true},
    {"start_unix_ms", ValueKind::kInt64, true},
    {"duration_ms", ValueKind::kUint64, true},
    {"process", ValueKind::kString, false},
    {"threshold_ms", ValueKind::kUint64, false},
};

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_RECORD_TYPES_H_
