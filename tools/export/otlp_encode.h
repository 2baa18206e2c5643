// Hang records as OpenTelemetry log records (OTLP logs, `hangwatch export`), and the two OTLP/HTTP
// encodings of an ExportLogsServiceRequest: OTLP's JSON mapping and binary protobuf.
//
// One log record per hang, grouped by resource (one process run on one host):
//   resource: service.name (process_name), host.name, process.pid, and every label (k: v);
//   scope:    name "hangwatch";
//   record:   time = start_unix_ms, observed time = when exported, severity WARN (13), FATAL (21)
//             for a fatal hang, body = a one-line summary, attributes hang.duration_ms,
//             hang.cpu_ms, hang.class, hang.signature, hang.fingerprint, hang.samples and, when
//             the hang has a culprit, hang.culprit.function and (when known) hang.culprit.file and
//             hang.culprit.line; what the pass served and whether a person waited, when known:
//             hang.context.label, hang.context.source, hang.trigger.kind, hang.perceived (a
//             boolean), hang.not_responding (when true), hang.input.events; and only when asked
//             (OtlpOptions::with_peers: who else was involved, which may name other hosts and
//             programs) hang.trigger.peer, hang.trigger.pid, hang.trigger.process.
//
// The protobuf encoding is written by hand with a small writer (ProtoWriter): the request is six
// message types of opentelemetry-proto (logs/v1, common/v1, resource/v1, collector/logs/v1) and
// uses five wire constructs; generating them with protoc would bring libprotobuf into the static
// CLI for that. The tests decode every request with the official schema
// (@opentelemetry/otlp-transformer's generated code), so a wrong field number cannot pass.
#ifndef HANGWATCH_TOOLS_OTLP_ENCODE_H_
#define HANGWATCH_TOOLS_OTLP_ENCODE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hangwatch/hang_record.h"

namespace hangwatch::tools {

// An OTLP AnyValue of the three kinds hang records need: a string, an integer, a boolean.
struct OtlpValue {
  bool is_int = false;
  bool is_bool = false;
  bool bool_value = false;
  std::string string_value;
  int64_t int_value = 0;
};

struct OtlpAttribute {
  std::string key;
  OtlpValue value;
};

struct OtlpLogRecord {
  uint64_t time_unix_nano = 0;
  uint64_t observed_time_unix_nano = 0;
  int severity_number = 0;  // SeverityNumber: WARN = 13, FATAL = 21
  std::string severity_text;
  std::string body;
  std::vector<OtlpAttribute> attributes;
};

// The log records of one resource.
struct OtlpResourceLogs {
  std::vector<OtlpAttribute> resource;
  std::vector<OtlpLogRecord> records;
};

inline constexpr int kSeverityWarn = 13;
inline constexpr int kSeverityFatal = 21;
inline constexpr char kOtlpScopeName[] = "hangwatch";

// The one-line body of a hang's record, e.g.
// "redis-server: main thread hung 412 ms (busy, 98% CPU) in debugCommand at debug.c:1008",
// followed by "; " and the cause's summary when the hang has a cause. The log record's
// attributes carry hang.cause.kind and hang.cause.summary then.
std::string HangSummary(const HangRecord& hang);

struct OtlpOptions {
  // hang.trigger.peer, .pid and .process (the other end of what began the pass): off unless
  // asked (`hangwatch export --with-peers`).
  bool with_peers = false;
};

// The hangs' log records, grouped by resource in order of first appearance.
std::vector<OtlpResourceLogs> HangsToOtlpLogs(std::span<const HangRecord> hangs,
                                              uint64_t observed_unix_nano,
                                              const OtlpOptions& options = {});

// An ExportLogsServiceRequest in OTLP's JSON encoding (lowerCamelCase names, 64-bit integers as
// decimal strings, enums as numbers), for Content-Type application/json.
std::string EncodeOtlpJson(const std::vector<OtlpResourceLogs>& logs);

// The same request as binary protobuf, for Content-Type application/x-protobuf.
std::string EncodeOtlpProtobuf(const std::vector<OtlpResourceLogs>& logs);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_OTLP_ENCODE_H_
