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

std::vector<std::shared_ptr<LagCallback>> CallbackRegistry::CopyLag() {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::shared_ptr<LagCallback>> out;
  for (auto& [id, cb] : lag_callbacks) out.push_back(cb);
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

void CallbackSink::OnLag(const report::Lag& record, SinkErrors* errors) {
  const auto callbacks = Callbacks().CopyLag();
  if (callbacks.empty()) return;
  for (const auto& cb : callbacks) {
    try {
      (*cb)(record);
    } catch (const std::exception& e) {
      errors->push_back(std::string("a lag callback threw: ") + e.what());
    } catch (...) {
      errors->push_back("a lag callback threw");
    }
  }
}

}  // namespace hangwatch::agent

namespace hangwatch {

int AddHangCallback(HangCallback callback) {
  auto& r = agent::Callbacks();
  std::lock_guard<std::mutex> lock(r.mu);
  const int id = r.next_id++;
  r.callbacks.emplace_back(id, std::make_shared<HangCallback>(std::move(callback)));
  return id;
}

bool RemoveHangCallback(int id) {
  auto& r = agent::Callbacks();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto it = r.callbacks.begin(); it != r.callbacks.end(); ++it) {
    if (it->first == id) {
      r.callbacks.erase(it);
      return true;
    }
  }
  return false;
}

int AddLagCallback(LagCallback callback) {
  auto& r = agent::Callbacks();
  std::lock_guard<std::mutex> lock(r.mu);
  const int id = r.next_id++;
  r.lag_callbacks.emplace_back(id, std::make_shared<LagCallback>(std::move(callback)));
  return id;
}

bool RemoveLagCallback(int id) {
  auto& r = agent::Callbacks();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto it = r.lag_callbacks.begin(); it != r.lag_callbacks.end(); ++it) {
    if (it->first == id) {
      r.lag_callbacks.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace hangwatch
