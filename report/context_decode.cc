// The decoder of a hang's context, input and perceived (docs/report-format.md, "context" and
// "input"), the counterpart of context_encode.cc. A member that is absent reads as its
// default; one of the wrong type or range fails the line, naming it ("field 'context': field
// 'label' is not a string"). The scanner checks the same rules (context_scan.cc).
#include <algorithm>
#include <string>
#include <vector>

#include "report/decode_fields.h"
#include "report/trigger_kind.h"

namespace hangwatch::report::decode_internal {
namespace {

// An array of strings; absent reads as empty.
bool Strings(const json& j, const char* name, std::vector<std::string>* out, std::string* error) {
  auto it = j.find(name);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    *error = std::string("field '") + name + "' is not an array of strings";
    return false;
  }
  for (const json& s : *it) {
    if (!s.is_string()) {
      *error = std::string("field '") + name + "' is not an array of strings";
      return false;
    }
    out->push_back(s.get<std::string>());
  }
  return true;
}

bool ParseTrigger(const json& j, Trigger* t, std::string* error) {
  if (!j.is_object()) {
    *error = "field 'trigger' is not an object";
    return false;
  }
  Fields f{j, error};
  if (!f.Str("kind", &t->kind, true) || !f.Str("detail", &t->detail, true) ||
      !f.Int("fd", &t->fd, true) || !f.Int("ready", &t->ready, true) ||
      !f.Str("peer", &t->peer, true) || !f.Int("pid", &t->pid, true) ||
      !f.Str("process", &t->process, true) || !f.Int("timeout_ms", &t->timeout_ms, true)) {
    return false;
  }
  SplitTriggerKind(t);  // a record of 0.x whose kind was the precise name
  return true;
}

bool ParseContext(const json& j, Context* c, std::string* error) {
  if (!j.is_object()) {
    *error = "is not an object";
    return false;
  }
  Fields f{j, error};
  if (!f.Str("label", &c->label, true) || !Strings(j, "label_path", &c->label_path, error) ||
      !f.Int("label_depth", &c->label_depth, true) || !f.Str("source", &c->source, true) ||
      !f.Str("callback", &c->callback, true)) {
    return false;
  }
  // Absent (or smaller): the labels on the stack were the ones kept.
  c->label_depth = std::max(c->label_depth, static_cast<uint32_t>(c->label_path.size()));
  if (auto it = j.find("trigger"); it != j.end()) {
    if (!ParseTrigger(*it, &c->trigger, error)) return false;
    c->has_trigger = true;
  }
  return true;
}

bool ParseInput(const json& j, Input* in, std::string* error) {
  if (!j.is_object()) {
    *error = "is not an object";
    return false;
  }
  Fields f{j, error};
  in->known = true;
  if (!f.Bool("pending", &in->pending, true) || !f.Int("events", &in->events, true) ||
      !f.Bool("events_lower_bound", &in->events_lower_bound, true) ||
      !f.Bool("ping", &in->ping, true) || !f.Int("ping_ms", &in->ping_ms, true) ||
      !Strings(j, "kinds", &in->kinds, error)) {
    return false;
  }
  if (j.contains("oldest_ms")) {
    in->oldest_known = true;
    return f.Int("oldest_ms", &in->oldest_ms);
  }
  return true;
}

}  // namespace

bool ParseContextFields(const json& j, HangRecord* h, std::string* error) {
  if (auto it = j.find("context"); it != j.end() && !ParseContext(*it, &h->context, error)) {
    *error = "field 'context': " + *error;
    return false;
  }
  if (auto it = j.find("input"); it != j.end() && !ParseInput(*it, &h->input, error)) {
    *error = "field 'input': " + *error;
    return false;
  }
  Fields f{j, error};
  bool perceived = false;
  if (j.contains("perceived")) {
    if (!f.Bool("perceived", &perceived)) return false;
    h->perceived = perceived;
  }
  return f.Bool("not_responding", &h->not_responding, true) &&
         f.Int("queued_ms", &h->queued_ms, true);
}

}  // namespace hangwatch::report::decode_internal
