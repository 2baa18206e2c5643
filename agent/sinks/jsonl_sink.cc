#include "agent/sinks/jsonl_sink.h"

#include <atomic>
#include <utility>

namespace hangwatch::agent {
namespace {

std::atomic<UnwrittenRecordObserver> g_unwritten_observer{nullptr};

}  // namespace

void SetUnwrittenRecordObserver(UnwrittenRecordObserver observer) {
  g_unwritten_observer.store(observer, std::memory_order_release);
}

void NotifyUnwrittenRecord(const char* type, int error_number) {
  if (auto observer = g_unwritten_observer.load(std::memory_order_acquire)) {
    observer(type, error_number);
  }
}

void JsonlSink::OnHang(const HangRecord& record, SinkErrors* errors) {
  Append(report::Encode(record), "hang", errors);
}

void JsonlSink::OnStartupStall(const report::StartupStall& record, SinkErrors* errors) {
  Append(report::Encode(record), "startup_stall", errors);
}

void JsonlSink::OnLag(const report::Lag& record, SinkErrors* errors) {
  Append(report::Encode(record), "lag", errors);
}

void JsonlSink::Append(const std::string& line, const char* type, SinkErrors* errors) {
  std::string error;
  if (!writer_.Append(line, &error)) {
    errors->push_back(error.empty() ? "cannot write " + writer_.path() : error);
    NotifyUnwrittenRecord(type, writer_.error_number());
  }
  // Written, with something to say once (a rotation skipped after the process changed user):
  // it goes where sink errors go (the agent's logger), the record is not counted as lost.
  if (std::string notice = writer_.TakeNotice(); !notice.empty()) {
    errors->push_back(std::move(notice));
  }
}

}  // namespace hangwatch::agent
