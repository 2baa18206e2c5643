// Hang records -> OTLP log records -> OTLP/JSON or protobuf bytes.
#include "tools/export/otlp_encode.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <tuple>

#include "nlohmann/json.hpp"
#include "report/cause_text.h"
#include "report/names.h"
#include "report/record_types.h"
#include "report/stack_identity.h"
#include "report/utf8.h"
#include "tools/common/names.h"

namespace hangwatch::tools {
namespace {

// The culprit's function alone: hang.culprit.file and .line say where.
std::string CulpritFunction(const Culprit& c) {
  return CulpritLabel(c, CulpritLabelStyle::kFunction);
}

std::string ServiceName(const HangRecord& h) {
  const std::string name(report::ProcessName(h.process_name, h.process));
  return name.empty() ? "unknown_service"
                      : name;  // the OpenTelemetry default for a service without a name
}

// Protobuf `string` fields must be UTF-8 (the Collector rejects a request that is not), and symbol
// names of stripped or damaged binaries can be anything: the report format's rule applies.
using report::ValidUtf8;

// The cause's summary; described from its fields when the writer left it out.
std::string CauseSummary(const HangRecord& h) {
  return h.cause.summary.empty() ? report::DescribeCause(h.cause, h.duration_ms) : h.cause.summary;
}

OtlpAttribute Str(std::string key, std::string value) {
  OtlpAttribute a;
  a.key = ValidUtf8(key);
  a.value.string_value = ValidUtf8(value);
  return a;
}

OtlpAttribute Int(std::string key, int64_t value) {
  OtlpAttribute a;
  a.key = std::move(key);
  a.value.is_int = true;
  a.value.int_value = value;
  return a;
}

OtlpAttribute Bool(std::string key, bool value) {
  OtlpAttribute a;
  a.key = std::move(key);
  a.value.is_bool = true;
  a.value.bool_value = value;
  return a;
}

// What the pass served and whether a person waited (docs/report-format.md, "context").
void AddContext(const HangRecord& h, const OtlpOptions& options, std::vector<OtlpAttribute>* a) {
  const Context& c = h.context;
  const std::string label = !c.label.empty()        ? c.label
                            : !c.label_path.empty() ? c.label_path.back()
                                                    : std::string();
  if (!label.empty()) a->push_back(Str("hang.context.label", label));
  if (!c.source.empty()) a->push_back(Str("hang.context.source", c.source));
  if (c.has_trigger && !c.trigger.kind.empty()) {
    a->push_back(Str("hang.trigger.kind", c.trigger.kind));
    if (!c.trigger.detail.empty()) a->push_back(Str("hang.trigger.detail", c.trigger.detail));
  }
  if (options.with_peers && c.has_trigger) {
    if (!c.trigger.peer.empty()) a->push_back(Str("hang.trigger.peer", c.trigger.peer));
    if (c.trigger.pid != 0) a->push_back(Int("hang.trigger.pid", c.trigger.pid));
    if (!c.trigger.process.empty()) a->push_back(Str("hang.trigger.process", c.trigger.process));
  }
  if (h.perceived.has_value()) a->push_back(Bool("hang.perceived", *h.perceived));
  if (h.not_responding) a->push_back(Bool("hang.not_responding", true));
  if (h.input.known) a->push_back(Int("hang.input.events", h.input.events));
}

OtlpLogRecord ToLogRecord(const HangRecord& h, uint64_t observed_unix_nano,
                          const OtlpOptions& options) {
  OtlpLogRecord r;
  r.time_unix_nano = h.start_unix_ms > 0 ? static_cast<uint64_t>(h.start_unix_ms) * 1000000u : 0;
  r.observed_time_unix_nano = observed_unix_nano;
  r.severity_number = h.fatal ? kSeverityFatal : kSeverityWarn;
  r.severity_text = h.fatal ? "FATAL" : "WARN";
  r.body = ValidUtf8(HangSummary(h));
  auto& a = r.attributes;
  a.push_back(Int("hang.duration_ms", static_cast<int64_t>(h.duration_ms)));
  a.push_back(Int("hang.cpu_ms", static_cast<int64_t>(h.cpu_ms)));
  a.push_back(Str("hang.class", HangClassName(h.hang_class)));
  a.push_back(Str("hang.signature", h.signature));
  a.push_back(Str("hang.fingerprint", h.fingerprint));
  if (!h.culprit.empty()) {
    a.push_back(Str("hang.culprit.function", CulpritFunction(h.culprit)));
    if (!h.culprit.file.empty()) {
      a.push_back(Str("hang.culprit.file", h.culprit.file));
      if (h.culprit.line > 0) a.push_back(Int("hang.culprit.line", h.culprit.line));
    }
  }
  if (!h.cause.empty()) {
    a.push_back(Str("hang.cause.kind", CauseKindName(h.cause.kind)));
    a.push_back(Str("hang.cause.summary", ValidUtf8(CauseSummary(h))));
  }
  AddContext(h, options, &a);
  a.push_back(Int("hang.samples", h.samples));
  // The thread that hung: OpenTelemetry's thread.id and thread.name (semantic conventions,
  // "General attributes"), and the role it was watched under (hangwatch/threads.h).
  a.push_back(Int("thread.id", h.tid));
  if (!h.thread_name.empty()) a.push_back(Str("thread.name", h.thread_name));
  a.push_back(Str("hang.thread.role", std::string(report::RoleOrMain(h.thread_role))));
  return r;
}

// ---- JSON ----

nlohmann::json JsonValue(const OtlpValue& v) {
  // OTLP/JSON: int64 values are decimal strings.
  if (v.is_int) return {{"intValue", std::to_string(v.int_value)}};
  if (v.is_bool) return {{"boolValue", v.bool_value}};
  return {{"stringValue", v.string_value}};
}

nlohmann::json JsonAttributes(const std::vector<OtlpAttribute>& attributes) {
  nlohmann::json out = nlohmann::json::array();
  for (const OtlpAttribute& a : attributes) {
    out.push_back({{"key", a.key}, {"value", JsonValue(a.value)}});
  }
  return out;
}

// ---- protobuf ----

// The wire format pieces an ExportLogsServiceRequest needs: varints, fixed64, length-delimited
// strings and nested messages (a nested message is written to its own writer, then copied in
// with its length).
class ProtoWriter {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes_ += static_cast<char>(v);
  }
  void Tag(int field, int wire_type) { Varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  void VarintField(int field, uint64_t v) {
    Tag(field, 0);
    Varint(v);
  }
  void Fixed64Field(int field, uint64_t v) {
    Tag(field, 1);
    for (int i = 0; i < 8; ++i) bytes_ += static_cast<char>(v >> (8 * i));
  }
  void BytesField(int field, const std::string& v) {
    Tag(field, 2);
    Varint(v.size());
    bytes_ += v;
  }
  void MessageField(int field, const ProtoWriter& m) { BytesField(field, m.bytes_); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// opentelemetry.proto.common.v1.AnyValue: string_value = 1, bool_value = 2, int_value = 3.
ProtoWriter ProtoValue(const OtlpValue& v) {
  ProtoWriter w;
  if (v.is_bool) {
    w.VarintField(2, v.bool_value ? 1 : 0);
  } else if (v.is_int) {
    w.VarintField(3, static_cast<uint64_t>(v.int_value));  // int64: two's complement varint
  } else {
    w.BytesField(1, v.string_value);
  }
  return w;
}

// opentelemetry.proto.common.v1.KeyValue: key = 1, value = 2.
void ProtoAttributes(int field, const std::vector<OtlpAttribute>& attributes, ProtoWriter* out) {
  for (const OtlpAttribute& a : attributes) {
    ProtoWriter kv;
    kv.BytesField(1, a.key);
    kv.MessageField(2, ProtoValue(a.value));
    out->MessageField(field, kv);
  }
}

}  // namespace

std::string HangSummary(const HangRecord& h) {
  const std::string_view role = report::RoleOrMain(h.thread_role);
  const std::string thread =
      role == report::kMainRole ? std::string("main thread") : std::string(role) + " thread";
  std::string s =
      ServiceName(h) + ": " + thread + (h.fatal ? " hung until the process died, " : " hung ");
  s += std::to_string(h.duration_ms) + " ms (" + HangClassName(h.hang_class);
  if (h.hang_class != HangClass::kUnknown) s += ", " + std::to_string(h.cpu_percent) + "% CPU";
  s += ")";
  if (!h.culprit.empty()) {
    s += " in " + CulpritFunction(h.culprit);
    if (!h.culprit.file.empty())
      s += " at " + FileLine(report::ModuleFileName(h.culprit.file), h.culprit.line);
  }
  if (!h.cause.empty()) s += "; " + CauseSummary(h);
  // One line, whatever the symbol names hold.
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::vector<OtlpResourceLogs> HangsToOtlpLogs(std::span<const HangRecord> hangs,
                                              uint64_t observed_unix_nano,
                                              const OtlpOptions& options) {
  using Key = std::tuple<std::string, std::string, int64_t, std::map<std::string, std::string>>;
  std::map<Key, size_t> index;
  std::vector<OtlpResourceLogs> out;
  for (const HangRecord& h : hangs) {
    Key key{ServiceName(h), h.host, h.pid, h.labels};
    auto [it, added] = index.emplace(std::move(key), out.size());
    if (added) {
      OtlpResourceLogs r;
      r.resource.push_back(Str("service.name", ServiceName(h)));
      if (!h.host.empty()) r.resource.push_back(Str("host.name", h.host));
      r.resource.push_back(Int("process.pid", h.pid));
      for (const auto& [k, v] : h.labels) r.resource.push_back(Str(k, v));
      out.push_back(std::move(r));
    }
    out[it->second].records.push_back(ToLogRecord(h, observed_unix_nano, options));
  }
  return out;
}

std::string EncodeOtlpJson(const std::vector<OtlpResourceLogs>& logs) {
  nlohmann::json resource_logs = nlohmann::json::array();
  for (const OtlpResourceLogs& r : logs) {
    nlohmann::json records = nlohmann::json::array();
    for (const OtlpLogRecord& l : r.records) {
      records.push_back({{"timeUnixNano", std::to_string(l.time_unix_nano)},
                         {"observedTimeUnixNano", std::to_string(l.observed_time_unix_nano)},
                         {"severityNumber", l.severity_number},
                         {"severityText", l.severity_text},
                         {"body", {{"stringValue", l.body}}},
                         {"attributes", JsonAttributes(l.attributes)}});
    }
    resource_logs.push_back(
        {{"resource", {{"attributes", JsonAttributes(r.resource)}}},
         {"scopeLogs", nlohmann::json::array(
                           {{{"scope", {{"name", kOtlpScopeName}}}, {"logRecords", records}}})}});
  }
  nlohmann::json request = {{"resourceLogs", resource_logs}};
  // Invalid UTF-8 in a symbol name (it happens in stripped binaries' garbage) is replaced, not
  // thrown on.
  return request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string EncodeOtlpProtobuf(const std::vector<OtlpResourceLogs>& logs) {
  // opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest: resource_logs = 1.
  ProtoWriter request;
  for (const OtlpResourceLogs& r : logs) {
    // opentelemetry.proto.resource.v1.Resource: attributes = 1.
    ProtoWriter resource;
    ProtoAttributes(1, r.resource, &resource);
    // opentelemetry.proto.common.v1.InstrumentationScope: name = 1.
    ProtoWriter scope;
    scope.BytesField(1, kOtlpScopeName);
    // opentelemetry.proto.logs.v1.ScopeLogs: scope = 1, log_records = 2.
    ProtoWriter scope_logs;
    scope_logs.MessageField(1, scope);
    for (const OtlpLogRecord& l : r.records) {
      // opentelemetry.proto.logs.v1.LogRecord: time_unix_nano = 1 (fixed64), severity_number = 2,
      // severity_text = 3, body = 5, attributes = 6, observed_time_unix_nano = 11 (fixed64).
      ProtoWriter record;
      record.Fixed64Field(1, l.time_unix_nano);
      record.VarintField(2, static_cast<uint64_t>(l.severity_number));
      record.BytesField(3, l.severity_text);
      OtlpValue body;
      body.string_value = l.body;
      record.MessageField(5, ProtoValue(body));
      ProtoAttributes(6, l.attributes, &record);
      record.Fixed64Field(11, l.observed_time_unix_nano);
      scope_logs.MessageField(2, record);
    }
    // opentelemetry.proto.logs.v1.ResourceLogs: resource = 1, scope_logs = 2.
    ProtoWriter resource_logs;
    resource_logs.MessageField(1, resource);
    resource_logs.MessageField(2, scope_logs);
    request.MessageField(1, resource_logs);
  }
  return request.bytes();
}

}  // namespace hangwatch::tools
