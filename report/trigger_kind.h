// The trigger's two names (docs/context.md): `kind`, one of a fixed set every reader can count
// on (socket, listen, pipe, timer, eventfd, signal, inotify, display, file, timeout, other), and
// `detail`, what the watchdog saw more precisely (tcp, udp, unix, fifo, timerfd, signalfd,
// interrupted, device, pidfd, epoll, gone, ...). The watchdog describes a descriptor by its
// precise name (agent/context/context_probe.h); records are written, and records of earlier
// versions (whose kind was the precise name) read, through SplitTriggerKind.
#ifndef HANGWATCH_REPORT_TRIGGER_KIND_H_
#define HANGWATCH_REPORT_TRIGGER_KIND_H_

#include <string_view>

#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// Whether `kind` is one of the fixed set.
bool IsTriggerKind(std::string_view kind);

// Makes t->kind one of the fixed set: a precise name moves to t->detail (unless a detail is
// there already) and the kind becomes its family ("tcp" -> "socket", "timerfd" -> "timer",
// "fifo" -> "pipe", "signalfd" -> "signal", "interrupted" -> "signal", anything unknown ->
// "other"). A kind of the set keeps its detail; "signal" without one was an interrupted wait.
void SplitTriggerKind(Trigger* t);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_TRIGGER_KIND_H_
