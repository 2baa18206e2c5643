#include "report/trigger_kind.h"

#include <string>

namespace hangwatch::report {
namespace {

struct Family {
  std::string_view detail;
  std::string_view kind;
};

constexpr Family kFamilies[] = {
    {"tcp", "socket"},    {"udp", "socket"},      {"unix", "socket"},        {"fifo", "pipe"},
    {"timerfd", "timer"}, {"signalfd", "signal"}, {"interrupted", "signal"},
};

constexpr std::string_view kKinds[] = {"socket",  "listen",  "pipe", "timer",   "eventfd", "signal",
                                       "inotify", "display", "file", "timeout", "other"};

}  // namespace

bool IsTriggerKind(std::string_view kind) {
  for (std::string_view k : kKinds) {
    if (k == kind) return true;
  }
  return false;
}

void SplitTriggerKind(Trigger* t) {
  if (t->kind.empty()) return;
  if (IsTriggerKind(t->kind)) {
    if (t->kind == "signal" && t->detail.empty()) t->detail = "interrupted";
    return;
  }
  std::string_view family = "other";
  for (const Family& f : kFamilies) {
    if (f.detail == t->kind) family = f.kind;
  }
  if (t->detail.empty()) t->detail = t->kind;
  t->kind.assign(family);
}

}  // namespace hangwatch::report
