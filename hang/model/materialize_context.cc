#include "hang/model/materialize_context.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "report/trigger_kind.h"

namespace hangwatch::agent {
namespace {

std::string Text(const char* s, size_t n) { return std::string(s, strnlen(s, n)); }

// A callback's name: its symbol, else "module+0xOFFSET" (the module's file name), else the
// address.
std::string CallbackName(const Frame& f) {
  if (!f.symbol.empty()) return f.symbol;
  char buf[64];
  if (!f.module.empty()) {
    const size_t slash = f.module.rfind('/');
    snprintf(buf, sizeof buf, "+0x%" PRIx64, f.offset);
    return f.module.substr(slash == std::string::npos ? 0 : slash + 1) + buf;
  }
  snprintf(buf, sizeof buf, "0x%" PRIx64, f.addr);
  return buf;
}

}  // namespace

std::vector<std::string> InputKindNames(uint32_t kinds) {
  static constexpr struct {
    uint32_t bit;
    const char* name;
  } kNames[] = {{kInputKey, "key"},     {kInputButton, "button"}, {kInputMotion, "motion"},
                {kInputTouch, "touch"}, {kInputPing, "ping"},     {kInputOther, "other"}};
  std::vector<std::string> out;
  for (const auto& k : kNames) {
    if ((kinds & k.bit) != 0) out.emplace_back(k.name);
  }
  return out;
}

void MaterializeContext(const HangContext& c, const std::function<Frame(uintptr_t)>& resolve,
                        HangRecord* r) {
  Context& x = r->context;
  const uint32_t kept = std::min<uint32_t>(c.label_count, internal::kMaxLabelDepth);
  for (uint32_t i = 0; i < kept; ++i) {
    x.label_path.push_back(Text(c.labels[i], HangContext::kLabelBytes));
  }
  if (!x.label_path.empty()) x.label = x.label_path.back();
  x.label_depth = c.label_depth;
  if (c.has_trigger && c.trigger_name[0] != '\0') {
    x.has_trigger = true;
    Trigger& t = x.trigger;
    t.kind = Text(c.trigger_name, sizeof c.trigger_name);  // the probe's precise name
    report::SplitTriggerKind(&t);
    t.fd = c.fd;
    t.ready = c.ready;
    t.peer = Text(c.peer, sizeof c.peer);
    t.pid = c.peer_pid;
    t.process = Text(c.peer_process, sizeof c.peer_process);
    t.timeout_ms = c.timeout_ms;
  }
  x.source = Text(c.source, sizeof c.source);
  if (c.callback != 0) x.callback = CallbackName(resolve(static_cast<uintptr_t>(c.callback)));

  const InputSnapshot& s = c.input;
  if (s.known) {
    Input& in = r->input;
    in.known = true;
    in.pending = s.pending;
    in.events = s.events;
    in.events_lower_bound = s.lower_bound;
    in.oldest_known = s.oldest_known && s.events > 0;
    in.oldest_ms = in.oldest_known ? s.oldest_ms : 0;
    in.kinds = InputKindNames(s.kinds);
    in.ping = s.ping;
    in.ping_ms = s.ping && s.ping_age_known ? s.ping_ms : 0;
  }
  if (c.perceived_known) r->perceived = c.perceived;
  r->not_responding = c.not_responding;
  r->queued_ms = c.queued_ms;
}

}  // namespace hangwatch::agent
