#include "agent/jsonl_sink.h"

namespace hangwatch::agent {

void JsonlSink::OnHang(const HangRecord& record, SinkErrors* errors) {
  Append(report::Encode(record), errors);
}

void JsonlSink::OnStartupStall(const report::StartupStall& record, SinkErrors* errors) {
  Append(report::Encode(record), errors);
}

void JsonlSink::OnLag(const report::Lag& record, SinkErrors* errors) {
  Append(report::Encode(record), errors);
}

void JsonlSink::Append(const std::string& line, SinkErrors* errors) {
  std::string error;
  if (!writer_.Append(line, &error)) {
    errors->push_back(error.empty() ? "cannot write " + writer_.path() : error);
  }
}

}  // namespace hangwatch::agent
