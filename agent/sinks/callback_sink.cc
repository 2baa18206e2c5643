#include "agent/sinks/callback_sink.h"

#include <exception>
#include <string>

namespace hangwatch::agent {
namespace {

void Call(const HangCallback& callback, const HangRecord& record, SinkErrors* errors) {
  try {
    callback(record);
  } catch (const std::exception& e) {
    errors->push_back(std::string("a hang callback threw: ") + e.what());
  } catch (...) {
    errors->push_back("a hang callback threw");
  }
}

}  // namespace

std::vector<std::shared_ptr<HangCallback>> CallbackRegistry::Copy() {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::shared_ptr<HangCallback>> out;
  for (auto& [id, cb] : callbacks) {
    out.push_back(cb);
  }
  return out;
}

bool CallbackRegistry::Empty() {
  std::lock_guard<std::mutex> lock(mu);
  return callbacks.empty();
}

CallbackRegistry& Callbacks() {
  static auto* registry = new CallbackRegistry;  // never destroyed: used until exit
  return *registry;
}

void CallbackSink::OnHang(const HangRecord& record, SinkErrors* errors) {
  if (on_hang_) {
    Call(on_hang_, record, errors);
  }
  for (const auto& cb : Callbacks().Copy()) {
    Call(*cb, record, errors);
  }
}

}  // namespace hangwatch::agent
