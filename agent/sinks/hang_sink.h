// HangSink: where the agent's records go. The Agent (agent/core/agent.cc) holds a list of sinks,
// made from the Config by SinksFromConfig() (sinks_from_config.h) when the agent starts, and
// hands every record to each of them on the watchdog thread. Today's sinks: SpdlogSink
// (spdlog_reporter.h), JsonlSink (jsonl_sink.h), CallbackSink (callback_sink.h). A new
// in-process sink is one class implementing this interface, plus the line in SinksFromConfig()
// that adds it (its settings go in Config).
//
// Locking (agent/core/agent.cc, docs/architecture.md "fork"): the watchdog holds the agent's busy
// lock while it works, so that fork() in another thread waits until the watchdog holds none of
// ours, of stdio's or spdlog's locks. Sinks whose calls may block for long (a file system, user
// code) say so with MayBlock(): they are called with the busy lock released, after the others.
// Calls of a sink that does not block run inside the busy section.
#ifndef HANGWATCH_AGENT_SINKS_HANG_SINK_H_
#define HANGWATCH_AGENT_SINKS_HANG_SINK_H_

#include <string>
#include <vector>

#include "hangwatch/hang_record.h"
#include "report/report_record.h"

namespace hangwatch::agent {

// What a sink could not do, one line each ("cannot write PATH: ..."). The agent logs them, once
// its busy lock is held again.
using SinkErrors = std::vector<std::string>;

class HangSink {
 public:
  virtual ~HangSink() = default;

  // True: called with the agent's busy lock released (file writes, user callbacks).
  virtual bool MayBlock() const = 0;
  // Whether a hang given now would be used. When no sink wants it, the agent does not
  // materialize the hang at all.
  virtual bool Wants() const { return true; }

  // One record of each type (report/report_record.h). A new record type adds its method here,
  // doing nothing by default, so that only the sinks that report it change.
  virtual void OnHang(const HangRecord& record, SinkErrors* errors) = 0;
  virtual void OnStartupStall(const report::StartupStall& /*record*/, SinkErrors* /*errors*/) {}
  virtual void OnLag(const report::Lag& /*record*/, SinkErrors* /*errors*/) {}

  // Called by Stop() before the sinks are released, with the busy lock held: a sink that
  // buffers pushes out what it holds. Today's sinks keep nothing of their own to push out (a
  // spdlog logger's flushing stays with its owner), so the default does nothing.
  virtual void Flush() {}

  // In a forked child (agent/core/agent.cc, AbandonAfterFork): gives back the descriptors this sink
  // holds of the process. System calls and atomic stores only; the sink is never used again.
  virtual void ReleaseAfterFork() {}
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_HANG_SINK_H_
