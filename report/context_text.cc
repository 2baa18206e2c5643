// context_text.h: a hang's context and input in words, and its context key.
#include "report/context_text.h"

#include <cstdio>
#include <string>

namespace hangwatch::report {

std::string ContextKey(const Context& c) {
  if (!c.label.empty()) return c.label;
  if (!c.label_path.empty()) return c.label_path.back();
  if (!c.source.empty()) return c.source;
  if (c.has_trigger) return c.trigger.kind;
  return "";
}

std::string WaitText(uint64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000);
  return buf;
}

namespace {

void Part(std::string* out, const std::string& part) {
  if (part.empty()) return;
  if (!out->empty()) out->append("; ");
  out->append(part);
}

std::string TriggerText(const Trigger& t) {
  // The precise name reads best ("trigger tcp 127.0.0.1:5555", "trigger gone").
  std::string s = "trigger " + (!t.detail.empty() && t.detail != "interrupted" ? t.detail
                                : t.kind.empty() ? std::string("unknown")
                                                 : t.kind);
  if (t.detail == "interrupted") s += " (interrupted)";
  if (!t.peer.empty()) s += " " + t.peer;
  if (!t.process.empty() || t.pid != 0) {
    s += " (";
    if (!t.process.empty()) s += t.process + (t.pid != 0 ? ", " : "");
    if (t.pid != 0) s += "pid " + std::to_string(t.pid);
    s += ")";
  }
  if (t.kind == "timeout") s += " after " + WaitText(t.timeout_ms);
  return s;
}

}  // namespace

std::string DescribeContext(const Context& c) {
  std::string out;
  std::string path;
  for (const std::string& label : c.label_path) path += (path.empty() ? "" : " > ") + label;
  if (c.label_path.empty() && !c.label.empty()) path = c.label;
  if (!path.empty() && c.label_depth > c.label_path.size()) path += " > ...";
  Part(&out, path);
  if (c.has_trigger) Part(&out, TriggerText(c.trigger));
  if (!c.source.empty()) Part(&out, "source " + c.source);
  if (!c.callback.empty()) Part(&out, "callback " + c.callback);
  return out;
}

std::string DescribeInput(const HangRecord& h) {
  std::string out;
  const Input& in = h.input;
  if (in.known) {
    std::string events;
    if (in.events == 0) {
      events = "no input waited";
    } else {
      events = (in.events_lower_bound ? "at least " : "") + std::to_string(in.events) +
               (in.events == 1 ? " input event waited" : " input events waited");
      std::string kinds;
      for (const std::string& k : in.kinds) kinds += (kinds.empty() ? "" : ", ") + k;
      if (!kinds.empty()) events += " (" + kinds + ")";
      if (in.oldest_known) events += ", oldest " + WaitText(in.oldest_ms);
    }
    Part(&out, events);
    if (in.ping) Part(&out, "a window manager's ping waited " + WaitText(in.ping_ms));
  }
  if (h.perceived.has_value()) Part(&out, *h.perceived ? "perceived" : "perceived: no");
  if (h.not_responding) Part(&out, "not responding");
  return out;
}

}  // namespace hangwatch::report
