// The encoders of report_record.h: each record as one line of docs/report-format.md.
// Hand-written (no JSON library in the agent): the format is small and fixed, and this keeps
// libhangwatch's dependencies short. Every string of every record type goes through
// AppendString, the format's one escaping.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

#include "report/cause_kinds.h"
#include "report/json_write.h"
#include "report/report_record.h"
#include "report/utf8.h"

namespace hangwatch::report {
namespace json_write {

void AppendString(std::string* out, const std::string& s) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // UTF-8 passes through; a byte that is not part of a well-formed sequence becomes U+FFFD
      // (report/utf8.h), so that a reader never rejects the line for it.
      const size_t n = Utf8SequenceAt(s, i);
      if (n == 0) {
        out->append("\xEF\xBF\xBD");
        ++i;
      } else {
        out->append(s, i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

void AppendInt(std::string* out, int64_t v) { out->append(std::to_string(v)); }
void AppendUint(std::string* out, uint64_t v) { out->append(std::to_string(v)); }

void Key(std::string* out, const char* key, bool first) {
  if (!first) {
    out->push_back(',');
  }
  out->push_back('"');
  out->append(key);
  out->append("\":");
}

}  // namespace json_write

namespace {

using json_write::AppendInt;
using json_write::AppendString;
using json_write::AppendUint;
using json_write::Key;

void AppendHex(std::string* out, uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "\"0x%" PRIx64 "\"", v);
  out->append(buf);
}

// Milliseconds to the microsecond ("12.345"), microseconds to the nanosecond: fixed decimals, so
// the same figure always prints the same and bucket bounds read back exactly.
void AppendFixed3(std::string* out, double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  out->append(buf);
}

char SafeState(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ? c : '?'; }

// `{"type":"TYPE","format_version":N`: how every record starts.
void Begin(std::string* out, std::string_view type, int version = kFormatVersion) {
  out->push_back('{');
  Key(out, "type", true);
  out->push_back('"');  // the type names of record_types.h need no escaping
  out->append(type);
  out->push_back('"');
  Key(out, "format_version");
  AppendInt(out, version);
}

// `"thread":{"tid":N,"name":"...","role":"..."}`: the name left out when empty, an empty role
// written as "main" (record_types.h).
void AppendThread(std::string* out, int64_t tid, const std::string& name, const std::string& role) {
  Key(out, "thread");
  out->push_back('{');
  Key(out, "tid", true);
  AppendInt(out, tid);
  if (!name.empty()) {
    Key(out, "name");
    AppendString(out, name);
  }
  Key(out, "role");
  AppendString(out, std::string(RoleOrMain(role)));
  out->push_back('}');
}

// `{"k":"v",...}`, keys in order.
void AppendLabels(std::string* out, const std::map<std::string, std::string>& labels) {
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out->push_back(',');
    first = false;
    AppendString(out, k);
    out->push_back(':');
    AppendString(out, v);
  }
  out->push_back('}');
}

// "p50_ms": ... "max_ms" of `f`.
void AppendPercentiles(std::string* out, const LagFigures& f) {
  const std::pair<const char*, double> percentiles[] = {{"p50_ms", f.p50_ms},
                                                        {"p90_ms", f.p90_ms},
                                                        {"p95_ms", f.p95_ms},
                                                        {"p99_ms", f.p99_ms},
                                                        {"max_ms", f.max_ms}};
  for (const auto& [key, value] : percentiles) {
    Key(out, key);
    AppendFixed3(out, value);
  }
}

// "buckets": the non-empty buckets of `h` as [upper_bound_us, count].
void AppendBuckets(std::string* out, const PassHistogram& h) {
  std::string& o = *out;
  Key(&o, "buckets");
  o.push_back('[');
  bool first = true;
  for (int i = 0; i < pass_histogram::kBuckets; ++i) {
    const uint64_t n = h.count(i);
    if (n == 0) continue;
    if (!first) o.push_back(',');
    first = false;
    o.push_back('[');
    AppendFixed3(&o, static_cast<double>(pass_histogram::BucketUpperNs(i)) / 1000);
    o.push_back(',');
    AppendUint(&o, n);
    o.push_back(']');
  }
  o.push_back(']');
}

}  // namespace

std::string Encode(const Lag& r) {
  const LagFigures f = r.passes.Figures();
  std::string o;
  o.reserve(512);
  Begin(&o, kLagType, FormatVersionForRole(r.thread_role));
  Key(&o, "pid");
  AppendInt(&o, r.pid);
  Key(&o, "process_name");
  AppendString(&o, r.process_name);
  Key(&o, "host");
  AppendString(&o, r.host);
  Key(&o, "labels");
  AppendLabels(&o, r.labels);
  AppendThread(&o, r.tid, r.thread_name, r.thread_role);
  Key(&o, "start_unix_ms");
  AppendInt(&o, r.start_unix_ms);
  Key(&o, "end_unix_ms");
  AppendInt(&o, r.end_unix_ms);
  Key(&o, "passes");
  AppendUint(&o, f.passes);
  Key(&o, "busy_ms");
  AppendFixed3(&o, f.busy_ms);
  AppendPercentiles(&o, f);
  Key(&o, "slow_passes");
  o.push_back('{');
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    if (t > 0) o.push_back(',');
    o.push_back('"');
    AppendInt(&o, kSlowPassThresholdsMs[t]);
    o.append("\":");
    AppendUint(&o, f.slow_passes[t]);
  }
  o.push_back('}');
  AppendBuckets(&o, r.passes);
  if (r.queued_passes > 0 || r.queued_passes_lost > 0) {  // only then, like the fields below
    Key(&o, "delay");
    o.push_back('{');
    Key(&o, "queued_passes", true);
    AppendUint(&o, r.queued_passes);
    if (r.queued_passes_lost > 0) {
      Key(&o, "lost");
      AppendUint(&o, r.queued_passes_lost);
    }
    const PassHistogram& delay = r.queued_passes > 0 ? r.delay : r.passes;
    AppendPercentiles(&o, delay.Figures());
    AppendBuckets(&o, delay);
    o.push_back('}');
  }
  if (r.threads_not_watched > 0) {  // only then: records without it stay what they were
    Key(&o, "threads_not_watched");
    AppendUint(&o, r.threads_not_watched);
  }
  o.push_back('}');
  return o;
}

std::string Encode(const StartupStall& s) {
  std::string o;
  o.reserve(160 + s.process.size());
  Begin(&o, kStartupStallType);
  Key(&o, "pid");
  AppendInt(&o, s.pid);
  Key(&o, "process");
  AppendString(&o, s.process);
  Key(&o, "start_unix_ms");
  AppendInt(&o, s.start_unix_ms);
  Key(&o, "duration_ms");
  AppendUint(&o, s.duration_ms);
  Key(&o, "threshold_ms");
  AppendUint(&o, s.threshold_ms);
  o.push_back('}');
  return o;
}

namespace {

// A culprit object, or null.
void AppendCulpritValue(std::string* out, const Culprit& c);

// "culprit": the frame blamed, or null.
void AppendCulprit(std::string* out, const HangRecord& r) {
  Key(out, "culprit");
  AppendCulpritValue(out, r.culprit);
}

void AppendCulpritValue(std::string* out, const Culprit& c) {
  std::string& o = *out;
  if (c.empty()) {
    o.append("null");
  } else {
    o.push_back('{');
    if (IsInterpreted(c.language)) {
      Key(&o, "kind", true);
      AppendString(&o, FrameLanguageName(c.language));
      Key(&o, "symbol");
    } else {
      Key(&o, "symbol", true);
    }
    AppendString(&o, c.symbol);
    Key(&o, "module");
    AppendString(&o, c.module);
    Key(&o, "offset");
    AppendHex(&o, c.offset);
    Key(&o, "file");
    AppendString(&o, c.file);
    Key(&o, "line");
    AppendInt(&o, c.line);
    if (c.line_is_definition) {
      Key(&o, "line_is_definition");
      o.append("true");
    }
    Key(&o, "frame");
    AppendInt(&o, c.frame);
    if (c.stack != 0) {
      Key(&o, "stack");
      AppendInt(&o, c.stack);
    }
    o.push_back('}');
  }
}

// A frame's "symbol", "file" and "line", each when known.
void AppendFrameName(std::string* out, const Frame& fr) {
  std::string& o = *out;
  if (!fr.symbol.empty()) {
    Key(&o, "symbol");
    AppendString(&o, fr.symbol);
  }
  if (!fr.file.empty()) {
    Key(&o, "file");
    AppendString(&o, fr.file);
    Key(&o, "line");
    AppendInt(&o, fr.line);
  }
}

// One frame of a stack.
void AppendFrame(std::string* out, const Frame& fr) {
  std::string& o = *out;
  o.push_back('{');
  if (IsInterpreted(fr.language)) {
    Key(&o, "kind", true);
    AppendString(&o, FrameLanguageName(fr.language));
    if (fr.language != FrameLanguage::kJava) {  // a Java frame is the JVM's word, no address
      Key(&o, "code");
      AppendHex(&o, fr.addr);
      Key(&o, "instr");
      AppendInt(&o, fr.offset);
    }
    AppendFrameName(&o, fr);
    if (fr.line_is_definition) {
      Key(&o, "line_is_definition");
      o.append("true");
    }
    o.push_back('}');
    return;
  }
  Key(&o, "addr", true);
  AppendHex(&o, fr.addr);
  Key(&o, "module");
  AppendString(&o, fr.module);
  Key(&o, "build_id");
  AppendString(&o, fr.build_id);
  Key(&o, "offset");
  AppendHex(&o, fr.offset);
  AppendFrameName(&o, fr);
  if (fr.method != FrameMethod::kUnknown) {
    Key(&o, "method");
    AppendString(&o, FrameMethodName(fr.method));
  }
  if (fr.function_start != 0) {
    Key(&o, "function_start");
    AppendHex(&o, fr.function_start);
  }
  o.push_back('}');
}

// "stacks": the unique stacks with their frames.
void AppendStacks(std::string* out, const HangRecord& r) {
  std::string& o = *out;
  Key(&o, "stacks");
  o.push_back('[');
  for (size_t i = 0; i < r.stacks.size(); ++i) {
    const Stack& s = r.stacks[i];
    if (i > 0) {
      o.push_back(',');
    }
    o.push_back('{');
    Key(&o, "id", true);
    AppendInt(&o, s.id);
    Key(&o, "count");
    AppendUint(&o, s.count);
    Key(&o, "first_seen_ms");
    AppendUint(&o, s.first_seen_ms);
    Key(&o, "last_seen_ms");
    AppendUint(&o, s.last_seen_ms);
    Key(&o, "cpu_ms");
    AppendUint(&o, s.cpu_us / 1000);
    if (s.partial) {
      Key(&o, "partial");
      o.append("true");
    }
    Key(&o, "frames");
    o.push_back('[');
    for (size_t f = 0; f < s.frames.size(); ++f) {
      const Frame& fr = s.frames[f];
      if (f > 0) {
        o.push_back(',');
      }
      AppendFrame(&o, fr);
    }
    o.append("]}");
  }
  o.push_back(']');
}

// "timeline": one entry per sample.
void AppendTimeline(std::string* out, const HangRecord& r) {
  std::string& o = *out;
  Key(&o, "timeline");
  o.push_back('[');
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    const TimelineEntry& t = r.timeline[i];
    if (i > 0) {
      o.push_back(',');
    }
    o.append("{\"t_ms\":");
    AppendUint(&o, t.t_ms);
    o.append(",\"stack\":");
    AppendInt(&o, t.stack);
    o.append(",\"cpu_us\":");
    AppendUint(&o, t.cpu_us);
    o.append(",\"state\":\"");
    o.push_back(SafeState(t.state));
    o.push_back('"');
    if (t.method != SampleMethod::kUnknown) {
      Key(&o, "method");
      AppendString(&o, SampleMethodName(t.method));
    }
    if (t.cause != CauseKind::kNone) {
      Key(&o, "cause");
      AppendString(&o, CauseKindName(t.cause));
      if (t.cause_tid != 0) {
        Key(&o, "cause_tid");
        AppendInt(&o, t.cause_tid);
      }
    }
    o.push_back('}');
  }
  o.push_back(']');
}

// The cause's objects (docs/report-format.md, "cause").
void AppendLock(std::string* out, const CauseLock& l) {
  if (l.empty()) {
    out->append("null");
    return;
  }
  out->push_back('{');
  Key(out, "type", true);
  AppendString(out, l.type);
  Key(out, "addr");
  AppendHex(out, l.addr);
  out->push_back('}');
}

void AppendCauseThread(std::string* out, const CauseThread& t) {
  std::string& o = *out;
  o.push_back('{');
  Key(&o, "tid", true);
  AppendInt(&o, t.tid);
  Key(&o, "name");
  AppendString(&o, t.name);
  Key(&o, "state");
  o.push_back('"');
  o.push_back(SafeState(t.state));
  o.push_back('"');
  Key(&o, "syscall");
  AppendString(&o, t.syscall);
  Key(&o, "wants");
  AppendLock(&o, t.wants);
  Key(&o, "holds");
  AppendLock(&o, t.holds);
  Key(&o, "culprit");
  AppendCulpritValue(&o, t.culprit);
  Key(&o, "frames");
  o.push_back('[');
  for (size_t f = 0; f < t.frames.size(); ++f) {
    if (f > 0) o.push_back(',');
    AppendFrame(&o, t.frames[f]);
  }
  o.append("]}");
}

void AppendThreads(std::string* out, const char* key, const std::vector<CauseThread>& threads) {
  Key(out, key);
  out->push_back('[');
  for (size_t i = 0; i < threads.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendCauseThread(out, threads[i]);
  }
  out->push_back(']');
}

void AppendProcess(std::string* out, const CauseProcess& p) {
  out->push_back('{');
  Key(out, "pid", true);
  AppendInt(out, p.pid);
  Key(out, "name");
  AppendString(out, p.name);
  Key(out, "state");
  out->push_back('"');
  out->push_back(SafeState(p.state));
  out->push_back('"');
  out->push_back('}');
}

// "cause": why the hang waited, or null. Each kind writes the evidence its row names
// (cause_kinds.h), group by group in one order.
void AppendCause(std::string* out, const Cause& c) {
  std::string& o = *out;
  Key(&o, "cause");
  if (c.empty()) {
    o.append("null");
    return;
  }
  o.push_back('{');
  Key(&o, "kind", true);
  AppendString(&o, CauseKindName(c.kind));
  Key(&o, "summary");
  AppendString(&o, c.summary);
  Key(&o, "syscall");
  AppendString(&o, c.syscall);
  const CauseKindRow* row = FindCauseKind(c.kind);
  const uint8_t evidence = row != nullptr ? row->evidence : kEvidenceNone;
  if (evidence & kEvidenceLocks) {
    Key(&o, "lock");
    AppendLock(&o, c.lock);
    Key(&o, "owner");
    if (c.has_owner) {
      AppendCauseThread(&o, c.owner);
    } else {
      o.append("null");
    }
    AppendThreads(&o, "chain", c.chain);
    Key(&o, "chain_truncated");
    o.append(c.chain_truncated ? "true" : "false");
  }
  if (evidence & kEvidenceCycle) AppendThreads(&o, "cycle", c.cycle);
  if (evidence & kEvidenceChild) {
    Key(&o, "child");
    AppendProcess(&o, c.child);
  }
  if (evidence & kEvidenceSleep) {
    Key(&o, "sleep_ms");
    AppendUint(&o, c.sleep_ms);
    Key(&o, "sleep_forever");
    o.append(c.sleep_forever ? "true" : "false");
  }
  if (evidence & kEvidenceFiles) {
    Key(&o, "path");
    AppendString(&o, c.path);
    Key(&o, "wchan");
    AppendString(&o, c.wchan);
    if (!c.kernel_stack.empty()) {
      Key(&o, "kernel_stack");
      AppendString(&o, c.kernel_stack);
    }
    Key(&o, "major_faults");
    AppendUint(&o, c.major_faults);
    Key(&o, "mapping");
    AppendString(&o, c.mapping);
    Key(&o, "fds");
    o.push_back('[');
    for (size_t i = 0; i < c.fds.size(); ++i) {
      if (i > 0) o.push_back(',');
      AppendInt(&o, c.fds[i]);
    }
    o.push_back(']');
    Key(&o, "peers");
    o.push_back('[');
    for (size_t i = 0; i < c.peers.size(); ++i) {
      if (i > 0) o.push_back(',');
      AppendProcess(&o, c.peers[i]);
    }
    o.push_back(']');
    Key(&o, "local_address");
    AppendString(&o, c.local_address);
    Key(&o, "remote_address");
    AppendString(&o, c.remote_address);
  }
  if (evidence & kEvidenceScheduling) {
    Key(&o, "run_delay_ms");
    AppendUint(&o, c.run_delay_ms);
    Key(&o, "runnable_threads");
    AppendUint(&o, c.runnable_threads);
    Key(&o, "throttled_ms");
    AppendUint(&o, c.throttled_ms);
    Key(&o, "nr_throttled");
    AppendUint(&o, c.nr_throttled);
    Key(&o, "pressure_resource");
    AppendString(&o, c.pressure_resource);
    Key(&o, "pressure_some_avg10");
    AppendFixed3(&o, c.pressure_some_avg10);
    Key(&o, "pressure_full_avg10");
    AppendFixed3(&o, c.pressure_full_avg10);
  }
  o.push_back('}');
}

// "modules": the modules the frames point into.
void AppendModules(std::string* out, const HangRecord& r) {
  std::string& o = *out;
  Key(&o, "modules");
  o.push_back('[');
  for (size_t i = 0; i < r.modules.size(); ++i) {
    const ModuleInfo& m = r.modules[i];
    if (i > 0) {
      o.push_back(',');
    }
    o.push_back('{');
    Key(&o, "path", true);
    AppendString(&o, m.path);
    Key(&o, "base");
    AppendHex(&o, m.base);
    Key(&o, "build_id");
    AppendString(&o, m.build_id);
    o.push_back('}');
  }
  o.push_back(']');
}

}  // namespace

std::string Encode(const HangRecord& r) {
  std::string o;
  o.reserve(1024 + r.stacks.size() * 512 + r.timeline.size() * 48);
  Begin(&o, kHangType, FormatVersionForRole(r.thread_role));
  Key(&o, "pid");
  AppendInt(&o, r.pid);
  Key(&o, "tid");
  AppendInt(&o, r.tid);
  AppendThread(&o, r.tid, r.thread_name, r.thread_role);
  Key(&o, "process");
  AppendString(&o, r.process);
  Key(&o, "process_name");
  AppendString(&o, r.process_name);
  Key(&o, "host");
  AppendString(&o, r.host);
  Key(&o, "labels");
  AppendLabels(&o, r.labels);
  Key(&o, "hang_id");
  AppendUint(&o, r.hang_id);
  Key(&o, "start_unix_ms");
  AppendInt(&o, r.start_unix_ms);
  Key(&o, "duration_ms");
  AppendUint(&o, r.duration_ms);
  Key(&o, "cpu_ms");
  AppendUint(&o, r.cpu_ms);
  Key(&o, "cpu_percent");
  AppendUint(&o, r.cpu_percent);
  Key(&o, "class");
  AppendString(&o, HangClassName(r.hang_class));
  Key(&o, "stopped_ms");
  AppendUint(&o, r.stopped_ms);
  Key(&o, "threshold_ms");
  AppendUint(&o, r.threshold_ms);
  Key(&o, "sample_interval_ms");
  AppendUint(&o, r.sample_interval_ms);
  Key(&o, "samples");
  AppendUint(&o, r.samples);
  Key(&o, "failed_samples");
  AppendUint(&o, r.failed_samples);
  Key(&o, "dropped_stacks");
  AppendUint(&o, r.dropped_stacks);
  Key(&o, "fatal");
  o.append(r.fatal ? "true" : "false");
  if (r.phase != HangPhase::kRun) {  // absent: the run phase (and every file of older agents)
    Key(&o, "phase");
    AppendString(&o, HangPhaseName(r.phase));
  }
  Key(&o, "fingerprint");
  AppendString(&o, r.fingerprint);
  Key(&o, "signature");
  AppendString(&o, r.signature);
  AppendCulprit(&o, r);
  Key(&o, "dominant_stack");
  AppendInt(&o, r.dominant_stack);

  AppendStacks(&o, r);
  AppendTimeline(&o, r);
  Key(&o, "timeline_truncated");
  o.append(r.timeline_truncated ? "true" : "false");

  AppendModules(&o, r);
  AppendCause(&o, r.cause);
  Key(&o, "monitor_pause_us");
  AppendUint(&o, r.monitor_pause_us);
  AppendContextFields(&o, r);
  o.push_back('}');
  return o;
}

}  // namespace hangwatch::report
