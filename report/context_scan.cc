// context_scan.h: a context's and an input's members checked from their raw text by the rules
// of context_decode.cc (absent: the default; present: of its JSON type and the range of its
// C++ member), with record_scan.h's member and element walks.
#include "report/context_scan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "report/record_scan.h"
#include "report/trigger_kind.h"

namespace hangwatch::report {
namespace {

// The decoder's integer rule: digits (and a '-' for a signed member), within T's range.
template <typename T>
bool Integer(std::string_view raw, T* out) {
  if constexpr (std::is_signed_v<T>) {
    int64_t v = 0;
    if (!ParseInt64(raw, &v) || v < std::numeric_limits<T>::min() ||
        v > std::numeric_limits<T>::max()) {
      return false;
    }
    *out = static_cast<T>(v);
  } else {
    uint64_t v = 0;
    if (!ParseUint64(raw, &v) || v > std::numeric_limits<T>::max()) return false;
    *out = static_cast<T>(v);
  }
  return true;
}

bool String(std::string_view raw, std::string* out) {
  if (raw.empty() || raw[0] != '"') return false;
  std::string scratch;
  const std::string_view text = StringValue(raw, &scratch);
  out->assign(text.data(), text.size());
  return true;
}

bool Boolean(std::string_view raw, bool* out) {
  if (raw != "true" && raw != "false") return false;
  *out = raw == "true";
  return true;
}

bool Strings(std::string_view raw, std::vector<std::string>* out) {
  if (raw.empty() || raw[0] != '[') return false;
  bool ok = true;
  ForEachElement(raw, [&](std::string_view x) {
    std::string s;
    ok = ok && String(x, &s);
    if (ok) out->push_back(std::move(s));
  });
  return ok;
}

bool ScanTrigger(std::string_view raw, Trigger* t) {
  if (raw.empty() || raw[0] != '{') return false;
  bool ok = true;
  ForEachMember(raw, [&](std::string_view key, std::string_view x) {
    if (key == "kind") {
      ok &= String(x, &t->kind);
    } else if (key == "detail") {
      ok &= String(x, &t->detail);
    } else if (key == "fd") {
      ok &= Integer(x, &t->fd);
    } else if (key == "ready") {
      ok &= Integer(x, &t->ready);
    } else if (key == "peer") {
      ok &= String(x, &t->peer);
    } else if (key == "pid") {
      ok &= Integer(x, &t->pid);
    } else if (key == "process") {
      ok &= String(x, &t->process);
    } else if (key == "timeout_ms") {
      ok &= Integer(x, &t->timeout_ms);
    }
  });
  SplitTriggerKind(t);  // a record of 0.x whose kind was the precise name
  return ok;
}

}  // namespace

bool ScanContext(std::string_view raw, Context* out) {
  if (raw.empty() || raw[0] != '{') return false;
  Context c;
  bool ok = true;
  ForEachMember(raw, [&](std::string_view key, std::string_view x) {
    if (key == "label") {
      ok &= String(x, &c.label);
    } else if (key == "label_path") {
      ok &= Strings(x, &c.label_path);
    } else if (key == "label_depth") {
      ok &= Integer(x, &c.label_depth);
    } else if (key == "trigger") {
      ok &= ScanTrigger(x, &c.trigger);
      c.has_trigger = true;
    } else if (key == "source") {
      ok &= String(x, &c.source);
    } else if (key == "callback") {
      ok &= String(x, &c.callback);
    }
  });
  if (!ok) return false;
  c.label_depth = std::max(c.label_depth, static_cast<uint32_t>(c.label_path.size()));
  if (out != nullptr) *out = std::move(c);
  return true;
}

bool ScanInput(std::string_view raw, Input* out) {
  if (raw.empty() || raw[0] != '{') return false;
  Input in;
  in.known = true;
  bool ok = true;
  ForEachMember(raw, [&](std::string_view key, std::string_view x) {
    if (key == "pending") {
      ok &= Boolean(x, &in.pending);
    } else if (key == "events") {
      ok &= Integer(x, &in.events);
    } else if (key == "events_lower_bound") {
      ok &= Boolean(x, &in.events_lower_bound);
    } else if (key == "oldest_ms") {
      ok &= Integer(x, &in.oldest_ms);
      in.oldest_known = true;
    } else if (key == "kinds") {
      ok &= Strings(x, &in.kinds);
    } else if (key == "ping") {
      ok &= Boolean(x, &in.ping);
    } else if (key == "ping_ms") {
      ok &= Integer(x, &in.ping_ms);
    }
  });
  if (!ok) return false;
  if (out != nullptr) *out = std::move(in);
  return true;
}

}  // namespace hangwatch::report
