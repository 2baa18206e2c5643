// A hang's context, input and perceived as JSON (docs/report-format.md, "context" and
// "input"): every member written only when known, and nothing at all for a hang without them,
// so that such a hang's line keeps its bytes.
#include <string>
#include <vector>

#include "report/json_write.h"

namespace hangwatch::report {
namespace {

using json_write::AppendInt;
using json_write::AppendString;
using json_write::AppendUint;
using json_write::Key;

void AppendStrings(std::string* out, const std::vector<std::string>& strings) {
  out->push_back('[');
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendString(out, strings[i]);
  }
  out->push_back(']');
}

// `"key":"value"` after the object's first member, only when value is not empty; *first is
// whether the object has none yet.
void OptionalString(std::string* out, const char* key, const std::string& value, bool* first) {
  if (value.empty()) return;
  Key(out, key, *first);
  *first = false;
  AppendString(out, value);
}

void AppendTrigger(std::string* out, const Trigger& t) {
  out->push_back('{');
  bool first = true;
  OptionalString(out, "kind", t.kind, &first);
  OptionalString(out, "detail", t.detail, &first);
  if (t.fd >= 0) {
    Key(out, "fd", first);
    first = false;
    AppendInt(out, t.fd);
  }
  if (t.ready > 0) {
    Key(out, "ready", first);
    first = false;
    AppendUint(out, t.ready);
  }
  OptionalString(out, "peer", t.peer, &first);
  if (t.pid != 0) {
    Key(out, "pid", first);
    first = false;
    AppendInt(out, t.pid);
  }
  OptionalString(out, "process", t.process, &first);
  if (t.kind == "timeout") {
    Key(out, "timeout_ms", first);
    AppendUint(out, t.timeout_ms);
  }
  out->push_back('}');
}

void AppendContext(std::string* out, const Context& c) {
  Key(out, "context");
  out->push_back('{');
  bool first = true;
  OptionalString(out, "label", c.label, &first);
  if (!c.label_path.empty()) {
    Key(out, "label_path", first);
    first = false;
    AppendStrings(out, c.label_path);
  }
  if (c.label_depth > c.label_path.size()) {  // absent: the path's length
    Key(out, "label_depth", first);
    first = false;
    AppendUint(out, c.label_depth);
  }
  if (c.has_trigger) {
    Key(out, "trigger", first);
    first = false;
    AppendTrigger(out, c.trigger);
  }
  OptionalString(out, "source", c.source, &first);
  OptionalString(out, "callback", c.callback, &first);
  out->push_back('}');
}

void AppendInput(std::string* out, const Input& in) {
  Key(out, "input");
  out->push_back('{');
  Key(out, "pending", true);
  out->append(in.pending ? "true" : "false");
  Key(out, "events");
  AppendUint(out, in.events);
  if (in.events_lower_bound) {
    Key(out, "events_lower_bound");
    out->append("true");
  }
  if (in.oldest_known) {
    Key(out, "oldest_ms");
    AppendUint(out, in.oldest_ms);
  }
  if (!in.kinds.empty()) {
    Key(out, "kinds");
    AppendStrings(out, in.kinds);
  }
  if (in.ping) {
    Key(out, "ping");
    out->append("true");
    Key(out, "ping_ms");
    AppendUint(out, in.ping_ms);
  }
  out->push_back('}');
}

}  // namespace

void AppendContextFields(std::string* out, const HangRecord& r) {
  if (!r.context.empty()) AppendContext(out, r.context);
  if (r.input.known) AppendInput(out, r.input);
  if (r.perceived.has_value()) {
    Key(out, "perceived");
    out->append(*r.perceived ? "true" : "false");
  }
  if (r.not_responding) {
    Key(out, "not_responding");
    out->append("true");
  }
  if (r.queued_ms >= 0) {
    Key(out, "queued_ms");
    AppendInt(out, r.queued_ms);
  }
}

}  // namespace hangwatch::report
