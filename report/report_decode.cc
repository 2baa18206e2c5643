// The decoder of report_decode.h. The field readers check presence, type and range, and name
// the field in the error; what a record type reads is its Parse* function below, and the
// types this build knows are the rows of kRecordTypes.
#include "report/report_decode.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "nlohmann/json.hpp"
#include "report/cause_kinds.h"
#include "report/decode_fields.h"
#include "report/utf8.h"

namespace hangwatch::report {
namespace {

using decode_internal::Fields;
using nlohmann::json;

// The method names the agent writes; an unknown name (a newer writer) reads as kUnknown.
FrameMethod FrameMethodFromName(const std::string& name) {
  for (auto m : {FrameMethod::kPc, FrameMethod::kFramePointer, FrameMethod::kCfi,
                 FrameMethod::kLinkRegister, FrameMethod::kFramePointerScan}) {
    if (name == FrameMethodName(m)) return m;
  }
  return FrameMethod::kUnknown;
}
SampleMethod SampleMethodFromName(const std::string& name) {
  for (auto m : {SampleMethod::kSignal, SampleMethod::kProc, SampleMethod::kMach}) {
    if (name == SampleMethodName(m)) return m;
  }
  return SampleMethod::kUnknown;
}

bool ParseFrame(const json& j, Frame* f, std::string* error) {
  if (!j.is_object()) {
    *error = "a frame is not an object";
    return false;
  }
  Fields r{j, error};
  int64_t line = 0;
  std::string method;
  std::string kind;
  if (!r.Str("kind", &kind, true)) return false;
  if (!ParseFrameLanguage(kind, &f->language)) {
    *error = "a frame's 'kind' is none of \"native\", \"python\", \"js\", \"ruby\", \"java\"";
    return false;
  }
  if (IsInterpreted(f->language)) {
    const bool java = f->language == FrameLanguage::kJava;  // no "code" of its own
    if ((!java && !r.Hex("code", &f->addr)) || !r.Int("instr", &f->offset, true) ||
        !r.Str("symbol", &f->symbol, true) || !r.Str("file", &f->file, true) ||
        !r.Int("line", &line, true) ||
        !r.Bool("line_is_definition", &f->line_is_definition, true)) {
      return false;
    }
  } else if (!r.Hex("addr", &f->addr) || !r.Str("module", &f->module) ||
             !r.Str("build_id", &f->build_id) || !r.Hex("offset", &f->offset) ||
             !r.Str("symbol", &f->symbol, true) || !r.Str("file", &f->file, true) ||
             !r.Int("line", &line, true) || !r.Str("method", &method, true) ||
             (j.contains("function_start") && !r.Hex("function_start", &f->function_start))) {
    return false;
  }
  f->method = FrameMethodFromName(method);
  if (line < 0 || line > std::numeric_limits<int>::max()) {
    *error = "field 'line' is out of range";
    return false;
  }
  f->line = static_cast<int>(line);
  return true;
}

bool ParseStack(const json& j, Stack* s, std::string* error) {
  if (!j.is_object()) {
    *error = "a stack is not an object";
    return false;
  }
  Fields r{j, error};
  uint64_t cpu_ms = 0;
  if (!r.Int("id", &s->id) || !r.Int("count", &s->count) ||
      !r.Int("first_seen_ms", &s->first_seen_ms) || !r.Int("last_seen_ms", &s->last_seen_ms) ||
      !r.Int("cpu_ms", &cpu_ms, true) || !r.Bool("partial", &s->partial, true)) {
    return false;
  }
  if (cpu_ms > std::numeric_limits<uint64_t>::max() / 1000) {
    *error = "field 'cpu_ms' is out of range";
    return false;
  }
  s->cpu_us = cpu_ms * 1000;
  const json* frames = r.Array("frames");
  if (frames == nullptr) return false;
  s->frames.reserve(frames->size());
  for (const json& fj : *frames) {
    Frame f;
    if (!ParseFrame(fj, &f, error)) return false;
    s->frames.push_back(std::move(f));
  }
  return true;
}

// A culprit object; null reads as no culprit.
bool ParseCulprit(const json& j, Culprit* cu, std::string* error) {
  if (j.is_null()) return true;
  if (!j.is_object()) {
    *error = "field 'culprit' is not an object";
    return false;
  }
  Fields c{j, error};
  int64_t line = 0;
  int64_t frame = 0;
  int64_t stack = 0;
  std::string kind;
  if (!c.Str("kind", &kind, true)) return false;
  if (!ParseFrameLanguage(kind, &cu->language)) {
    *error =
        "field 'culprit' has a 'kind' none of \"native\", \"python\", \"js\", \"ruby\", \"java\"";
    return false;
  }
  if (!c.Bool("line_is_definition", &cu->line_is_definition, true)) return false;
  if (!c.Str("symbol", &cu->symbol, true) || !c.Str("module", &cu->module, true) ||
      !c.Str("file", &cu->file, true) || !c.Int("line", &line, true) ||
      !c.Int("frame", &frame, true) || !c.Int("stack", &stack, true)) {
    return false;
  }
  if (j.contains("offset") && !c.Hex("offset", &cu->offset)) return false;
  if (line < 0 || line > std::numeric_limits<int>::max() || frame < 0 ||
      frame > std::numeric_limits<int>::max() || stack < 0 ||
      stack > std::numeric_limits<int>::max()) {
    *error = "field 'culprit' has an out-of-range line, frame or stack";
    return false;
  }
  cu->line = static_cast<int>(line);
  cu->frame = static_cast<int>(frame);
  cu->stack = static_cast<int>(stack);
  return true;
}

char StateLetter(const std::string& s) { return s.size() == 1 ? s[0] : '?'; }

// {"type", "addr"} or null.
bool ParseCauseLock(const json& j, const char* name, CauseLock* l, std::string* error) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_object()) {
    *error = std::string("field '") + name + "' is not an object";
    return false;
  }
  Fields f{*it, error};
  return f.Str("type", &l->type) && f.Hex("addr", &l->addr);
}

bool ParseCauseThread(const json& j, CauseThread* t, std::string* error) {
  if (!j.is_object()) {
    *error = "a cause's thread is not an object";
    return false;
  }
  Fields f{j, error};
  std::string state;
  if (!f.Int("tid", &t->tid) || !f.Str("name", &t->name, true) || !f.Str("state", &state, true) ||
      !f.Str("syscall", &t->syscall, true) || !ParseCauseLock(j, "wants", &t->wants, error) ||
      !ParseCauseLock(j, "holds", &t->holds, error)) {
    return false;
  }
  t->state = StateLetter(state);
  if (auto it = j.find("culprit"); it != j.end() && !ParseCulprit(*it, &t->culprit, error)) {
    return false;
  }
  if (auto it = j.find("frames"); it != j.end()) {
    if (!it->is_array()) {
      *error = "field 'frames' is not an array";
      return false;
    }
    for (const json& fj : *it) {
      Frame fr;
      if (!ParseFrame(fj, &fr, error)) return false;
      t->frames.push_back(std::move(fr));
    }
  }
  return true;
}

bool ParseCauseThreads(const json& j, const char* name, std::vector<CauseThread>* out,
                       std::string* error) {
  auto it = j.find(name);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    *error = std::string("field '") + name + "' is not an array";
    return false;
  }
  for (const json& tj : *it) {
    CauseThread t;
    if (!ParseCauseThread(tj, &t, error)) return false;
    out->push_back(std::move(t));
  }
  return true;
}

bool ParseCauseProcess(const json& j, CauseProcess* p, std::string* error) {
  if (!j.is_object()) {
    *error = "a cause's process is not an object";
    return false;
  }
  Fields f{j, error};
  std::string state;
  if (!f.Int("pid", &p->pid) || !f.Str("name", &p->name, true) || !f.Str("state", &state, true)) {
    return false;
  }
  p->state = StateLetter(state);
  return true;
}

// "cause": null, or an object whose kind this build may not know (read as no cause, so that a
// newer writer's kinds do not fail the line).
bool ParseCause(const json& j, Cause* c, std::string* error) {
  if (j.is_null()) return true;
  if (!j.is_object()) {
    *error = "field 'cause' is not an object";
    return false;
  }
  Fields f{j, error};
  std::string kind;
  if (!f.Str("kind", &kind) || !f.Str("summary", &c->summary, true) ||
      !f.Str("syscall", &c->syscall, true) || !ParseCauseLock(j, "lock", &c->lock, error) ||
      !ParseCauseThreads(j, "chain", &c->chain, error) ||
      !f.Bool("chain_truncated", &c->chain_truncated, true) ||
      !ParseCauseThreads(j, "cycle", &c->cycle, error) || !f.Int("sleep_ms", &c->sleep_ms, true) ||
      !f.Bool("sleep_forever", &c->sleep_forever, true) || !f.Str("path", &c->path, true) ||
      !f.Str("wchan", &c->wchan, true) || !f.Str("kernel_stack", &c->kernel_stack, true) ||
      !f.Int("major_faults", &c->major_faults, true) || !f.Str("mapping", &c->mapping, true) ||
      !f.Str("local_address", &c->local_address, true) ||
      !f.Str("remote_address", &c->remote_address, true) ||
      !f.Int("run_delay_ms", &c->run_delay_ms, true) ||
      !f.Int("runnable_threads", &c->runnable_threads, true) ||
      !f.Int("throttled_ms", &c->throttled_ms, true) ||
      !f.Int("nr_throttled", &c->nr_throttled, true) ||
      !f.Str("pressure_resource", &c->pressure_resource, true) ||
      !f.Number("pressure_some_avg10", &c->pressure_some_avg10, true) ||
      !f.Number("pressure_full_avg10", &c->pressure_full_avg10, true)) {
    return false;
  }
  c->kind = CauseKindFromKey(kind);
  if (auto it = j.find("owner"); it != j.end() && !it->is_null()) {
    if (!ParseCauseThread(*it, &c->owner, error)) return false;
    c->has_owner = true;
  }
  if (auto it = j.find("child"); it != j.end() && !ParseCauseProcess(*it, &c->child, error)) {
    return false;
  }
  if (auto it = j.find("fds"); it != j.end()) {
    if (!it->is_array()) {
      *error = "field 'fds' is not an array";
      return false;
    }
    for (const json& fd : *it) {
      if (!fd.is_number_integer()) {
        *error = "field 'fds' holds a non-integer";
        return false;
      }
      c->fds.push_back(static_cast<int>(fd.get<int64_t>()));
    }
  }
  if (auto it = j.find("peers"); it != j.end()) {
    if (!it->is_array()) {
      *error = "field 'peers' is not an array";
      return false;
    }
    for (const json& pj : *it) {
      CauseProcess p;
      if (!ParseCauseProcess(pj, &p, error)) return false;
      c->peers.push_back(std::move(p));
    }
  }
  return true;
}

// "thread": {"tid", "name", "role"}; absent in records of agents that watched only the main
// thread, which reads as role "main" and *tid left as it is. An empty role reads as "main" too.
bool ParseThread(const json& j, int64_t* tid, std::string* name, std::string* role,
                 std::string* error) {
  auto it = j.find("thread");
  if (it == j.end()) {
    *role = kMainRole;
    return true;
  }
  if (!it->is_object()) {
    *error = "field 'thread' is not an object";
    return false;
  }
  Fields t{*it, error};
  if (!t.Int("tid", tid) || !t.Str("name", name, true) || !t.Str("role", role, true)) {
    *error = "field 'thread': " + *error;
    return false;
  }
  if (role->empty()) *role = kMainRole;
  return true;
}

bool ParseHang(const json& j, HangRecord* h, std::string* error) {
  Fields r{j, error};
  std::string cls, phase;
  if (!r.Int("pid", &h->pid) || !r.Int("tid", &h->tid) || !r.Str("process", &h->process, true) ||
      !r.Int("hang_id", &h->hang_id, true) || !r.Int("start_unix_ms", &h->start_unix_ms) ||
      !r.Int("duration_ms", &h->duration_ms) || !r.Int("cpu_ms", &h->cpu_ms) ||
      !r.Int("cpu_percent", &h->cpu_percent, true) || !r.Str("class", &cls, true) ||
      !r.Int("stopped_ms", &h->stopped_ms, true) ||
      !r.Int("threshold_ms", &h->threshold_ms, true) ||
      !r.Int("sample_interval_ms", &h->sample_interval_ms, true) ||
      !r.Int("samples", &h->samples) || !r.Int("failed_samples", &h->failed_samples, true) ||
      !r.Int("dropped_stacks", &h->dropped_stacks, true) || !r.Bool("fatal", &h->fatal, true) ||
      !r.Str("fingerprint", &h->fingerprint, true) || !r.Str("signature", &h->signature, true) ||
      !r.Str("process_name", &h->process_name, true) || !r.Str("host", &h->host, true) ||
      !r.Labels("labels", &h->labels) || !r.Int("dominant_stack", &h->dominant_stack, true) ||
      !r.Bool("timeline_truncated", &h->timeline_truncated, true) ||
      !r.Str("phase", &phase, true) || !r.Int("monitor_pause_us", &h->monitor_pause_us, true)) {
    return false;
  }
  // The thread's own tid is the top-level "tid" (which "thread" repeats).
  int64_t thread_tid = h->tid;
  if (!ParseThread(j, &thread_tid, &h->thread_name, &h->thread_role, error)) return false;
  // "cause": absent in files of older agents.
  if (auto it = j.find("cause"); it != j.end() && !ParseCause(*it, &h->cause, error)) {
    return false;
  }
  h->phase = phase == kPhaseShutdown  ? HangPhase::kShutdown
             : phase == kPhaseStartup ? HangPhase::kStartup
                                      : HangPhase::kRun;
  h->hang_class = cls == kClassBusy      ? HangClass::kBusy
                  : cls == kClassBlocked ? HangClass::kBlocked
                  : cls == kClassMixed   ? HangClass::kMixed
                                         : HangClass::kUnknown;
  const json* stacks = r.Array("stacks");
  if (stacks == nullptr) return false;
  for (const json& sj : *stacks) {
    Stack s;
    if (!ParseStack(sj, &s, error)) return false;
    h->stacks.push_back(std::move(s));
  }
  // "culprit": an object, or null (no stack); absent in files of older agents.
  if (auto it = j.find("culprit"); it != j.end() && !ParseCulprit(*it, &h->culprit, error)) {
    return false;
  }
  // Ids are indexes; a file that says otherwise is renumbered rather than trusted.
  for (size_t i = 0; i < h->stacks.size(); ++i) h->stacks[i].id = static_cast<int>(i);
  if (h->dominant_stack < -1 || h->dominant_stack >= static_cast<int>(h->stacks.size())) {
    *error = "field 'dominant_stack' is not an index into 'stacks'";
    return false;
  }
  if (auto it = j.find("timeline"); it != j.end()) {
    if (!it->is_array()) {
      *error = "field 'timeline' is not an array";
      return false;
    }
    for (const json& tj : *it) {
      if (!tj.is_object()) {
        *error = "a timeline entry is not an object";
        return false;
      }
      Fields t{tj, error};
      TimelineEntry e;
      std::string state;
      std::string method;
      if (!t.Int("t_ms", &e.t_ms) || !t.Int("stack", &e.stack) || !t.Int("cpu_us", &e.cpu_us) ||
          !t.Str("state", &state, true) || !t.Str("method", &method, true) ||
          !t.Int("cause_tid", &e.cause_tid, true)) {
        return false;
      }
      std::string cause;
      if (!t.Str("cause", &cause, true)) return false;
      e.cause = CauseKindFromKey(cause);
      e.method = SampleMethodFromName(method);
      if (e.stack < -1 || e.stack >= static_cast<int>(h->stacks.size())) e.stack = -1;
      e.state = state.size() == 1 ? state[0] : '?';
      h->timeline.push_back(e);
    }
  }
  if (!decode_internal::ParseContextFields(j, h, error)) return false;
  if (auto it = j.find("modules"); it != j.end()) {
    if (!it->is_array()) {
      *error = "field 'modules' is not an array";
      return false;
    }
    for (const json& mj : *it) {
      if (!mj.is_object()) {
        *error = "a module is not an object";
        return false;
      }
      Fields m{mj, error};
      ModuleInfo mod;
      if (!m.Str("path", &mod.path) || !m.Hex("base", &mod.base) ||
          !m.Str("build_id", &mod.build_id)) {
        return false;
      }
      h->modules.push_back(std::move(mod));
    }
  }
  return true;
}

bool ParseStartupStall(const json& j, StartupStall* s, std::string* error) {
  Fields r{j, error};
  return r.Int("pid", &s->pid) && r.Str("process", &s->process, true) &&
         r.Int("start_unix_ms", &s->start_unix_ms) && r.Int("duration_ms", &s->duration_ms) &&
         r.Int("threshold_ms", &s->threshold_ms, true);
}

// A lag record's "buckets" ([upper_bound_us, count] pairs) added to `h`.
bool ParseBuckets(const json* buckets, PassHistogram* h, std::string* error) {
  if (buckets == nullptr) return false;
  for (const json& b : *buckets) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number_unsigned()) {
      *error = "a bucket is not [upper_bound_us, count]";
      return false;
    }
    const double upper_us = b[0].get<double>();
    if (!(upper_us > 0 && upper_us < 1e15)) {
      *error = "a bucket's upper bound is out of range";
      return false;
    }
    const auto upper_ns = static_cast<uint64_t>(std::llround(upper_us * 1000));
    h->AddToBucket(pass_histogram::BucketOf(upper_ns - 1), b[1].get<uint64_t>());
  }
  return true;
}

// "delay": queued + running (its percentiles are derived from its buckets and not read).
bool ParseDelay(const json& j, Lag* l, std::string* error) {
  if (!j.is_object()) {
    *error = "field 'delay' is not an object";
    return false;
  }
  Fields d{j, error};
  if (!d.Int("queued_passes", &l->queued_passes) || !d.Int("lost", &l->queued_passes_lost, true)) {
    return false;
  }
  if (l->queued_passes == 0) return true;  // only lost ones: `passes` stands for it
  return ParseBuckets(d.Array("buckets"), &l->delay, error);
}

// The histogram comes back from "buckets" (each upper bound names its bucket), "busy_ms" and
// "slow_passes"; the percentiles in the line are derived from those and are not read.
bool ParseLag(const json& j, Lag* l, std::string* error) {
  Fields r{j, error};
  double busy_ms = 0;
  double max_ms = 0;  // derived from the buckets, not kept; typed as the scanner types it (top)
  if (!r.Int("pid", &l->pid) || !r.Number("max_ms", &max_ms, true) ||
      !r.Str("process_name", &l->process_name, true) || !r.Str("host", &l->host, true) ||
      !r.Labels("labels", &l->labels) || !r.Int("start_unix_ms", &l->start_unix_ms) ||
      !r.Int("end_unix_ms", &l->end_unix_ms) || !r.Number("busy_ms", &busy_ms) ||
      !r.Int("threads_not_watched", &l->threads_not_watched, true) ||
      !ParseThread(j, &l->tid, &l->thread_name, &l->thread_role, error)) {
    return false;
  }
  if (!(busy_ms >= 0 && busy_ms < 1e15)) {
    *error = "field 'busy_ms' is out of range";
    return false;
  }
  l->passes.AddBusyNs(static_cast<uint64_t>(std::llround(busy_ms * 1e6)));
  if (!ParseBuckets(r.Array("buckets"), &l->passes, error)) return false;
  if (auto it = j.find("delay"); it != j.end() && !ParseDelay(*it, l, error)) return false;
  if (auto it = j.find("slow_passes"); it != j.end()) {
    if (!it->is_object()) {
      *error = "field 'slow_passes' is not an object";
      return false;
    }
    for (int t = 0; t < kSlowPassThresholds; ++t) {
      auto v = it->find(std::to_string(kSlowPassThresholdsMs[t]));
      if (v == it->end()) continue;
      if (!v->is_number_unsigned()) {
        *error = "field 'slow_passes' has a count that is not an integer";
        return false;
      }
      l->passes.AddSlowPasses(t, v->get<uint64_t>());
    }
  }
  return true;
}

using Decoder = bool (*)(const json&, Record*, std::string*);
template <typename T, bool (*Parse)(const json&, T*, std::string*)>
bool DecodeAs(const json& j, Record* out, std::string* error) {
  T record;
  if (!Parse(j, &record, error)) return false;
  *out = std::move(record);
  return true;
}

struct RecordType {
  std::string_view name;
  Decoder decode;
};
// Every record type this build reads. A new type is one more row (and one more Record member).
constexpr RecordType kRecordTypes[] = {
    {kHangType, DecodeAs<HangRecord, ParseHang>},
    {kStartupStallType, DecodeAs<StartupStall, ParseStartupStall>},
    {kLagType, DecodeAs<Lag, ParseLag>},
};

// The line as a JSON object; false with *error when it is not one (a torn write, garbage).
// Bytes that are not UTF-8 (raw, as agents before the format's UTF-8 rule wrote them) are read
// as U+FFFD, the rule of report/utf8.h, instead of making the whole record unreadable.
bool ParseObject(std::string_view line, json* j, std::string* error) {
  *j = IsValidUtf8(line) ? json::parse(line, nullptr, /*allow_exceptions=*/false)
                         : json::parse(ValidUtf8(line), nullptr, /*allow_exceptions=*/false);
  if (!j->is_object()) {
    *error = "not a JSON object";
    return false;
  }
  return true;
}

// The record's "format_version" by record_types.h's rule: false with *error when it is not an
// integer; *this_version false for an integer this build does not read (IsReadableVersion).
bool ReadVersion(const json& j, bool* this_version, std::string* error) {
  auto it = j.find("format_version");
  if (it != j.end() && !it->is_number_integer()) {
    *error = "field 'format_version' is not an integer";
    return false;
  }
  if (it == j.end()) {
    *this_version = true;
  } else if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    *this_version =
        v <= static_cast<uint64_t>(INT64_MAX) && IsReadableVersion(true, static_cast<int64_t>(v));
  } else {
    *this_version = IsReadableVersion(true, it->get<int64_t>());
  }
  return true;
}

}  // namespace

bool Decode(std::string_view line, Record* out, std::string* error) {
  json j;
  if (!ParseObject(line, &j, error)) return false;
  auto type = j.find("type");
  const std::string name = type == j.end()     ? std::string(kHangType)
                           : type->is_string() ? type->get<std::string>()
                                               : "";
  bool this_version = true;
  if (!ReadVersion(j, &this_version, error)) return false;
  if (!this_version) {
    *out = UnknownRecord{name, /*other_version=*/true};
    return true;
  }
  for (const RecordType& t : kRecordTypes) {
    if (t.name == name) return t.decode(j, out, error);
  }
  *out = UnknownRecord{name};
  return true;
}

bool DecodeHang(std::string_view line, HangRecord* out, std::string* error) {
  json j;
  if (!ParseObject(line, &j, error)) return false;
  auto type = j.find("type");
  if (type != j.end() && (!type->is_string() || type->get<std::string>() != kHangType)) {
    *error = "not a hang record";
    return false;
  }
  bool this_version = true;
  if (!ReadVersion(j, &this_version, error)) return false;
  if (!this_version) {
    *error = "a record of another format_version";
    return false;
  }
  *out = HangRecord{};
  return ParseHang(j, out, error);
}

}  // namespace hangwatch::report
