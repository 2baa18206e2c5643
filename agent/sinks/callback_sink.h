// The callback sink: Config::on_hang and the callbacks registered with AddHangCallback(), which
// outlive any one agent (CallbackRegistry). User code may block, or fork: it runs with the
// agent's busy lock released. A callback that throws is reported as a sink error.
#ifndef HANGWATCH_AGENT_SINKS_CALLBACK_SINK_H_
#define HANGWATCH_AGENT_SINKS_CALLBACK_SINK_H_

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "agent/sinks/hang_sink.h"
#include "hangwatch/hangwatch.h"

namespace hangwatch::agent {

// Callbacks registered with AddHangCallback() and AddLagCallback(), by id.
struct CallbackRegistry {
  std::mutex mu;  // constructed anew in a forked child (agent/core/agent.cc, ChildAfterFork)
  int next_id = 1;
  std::vector<std::pair<int, std::shared_ptr<HangCallback>>> callbacks;
  std::vector<std::pair<int, std::shared_ptr<LagCallback>>> lag_callbacks;

  std::vector<std::shared_ptr<HangCallback>> Copy();
  std::vector<std::shared_ptr<LagCallback>> CopyLag();
  bool Empty();
};
// The process's registry: never destroyed, used until exit.
CallbackRegistry& Callbacks();

class CallbackSink final : public HangSink {
 public:
  explicit CallbackSink(HangCallback on_hang) : on_hang_(std::move(on_hang)) {}

  bool MayBlock() const override { return true; }
  bool Wants() const override { return on_hang_ || !Callbacks().Empty(); }
  // Config::on_hang first, then the registered callbacks in the order they were added.
  void OnHang(const HangRecord& record, SinkErrors* errors) override;
  // The lag callbacks, in the order they were added (none registered: nothing is copied).
  void OnLag(const report::Lag& record, SinkErrors* errors) override;

 private:
  const HangCallback on_hang_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_CALLBACK_SINK_H_
