// JsonlSink: the JSON Lines file sink (Config::json_path). Each record is encoded by the report
// codec (report/report_record.h) and appended by a JsonlWriter (hang/files/jsonl_writer.h: one
// write(2) per line, mode 0600, rotation, torn-line recovery). The preload shim writes its start-up
// stalls through one too, so every line of the file goes through the same writer.
#ifndef HANGWATCH_AGENT_SINKS_JSONL_SINK_H_
#define HANGWATCH_AGENT_SINKS_JSONL_SINK_H_

#include <cstdint>
#include <string>
#include <utility>

#include "agent/sinks/hang_sink.h"
#include "hang/files/jsonl_writer.h"

namespace hangwatch::agent {

// Told of every record a JsonlSink could not write: its type ("hang", "lag", "startup_stall":
// the report format's names) and the errno, on the thread that wrote it. The preload shim passes
// them on to `hangwatch run` (its launch log), which runs the shim without a logger and would
// otherwise never learn that hangs were lost to a full disk. One per process; null: none.
using UnwrittenRecordObserver = void (*)(const char* type, int error_number);
void SetUnwrittenRecordObserver(UnwrittenRecordObserver observer);
// Tells the observer, if any, of one record that was lost: by a JsonlSink's failed write, or by
// the agent before any sink had it (ENOMEM: it could not be built for want of memory).
void NotifyUnwrittenRecord(const char* type, int error_number);

class JsonlSink final : public HangSink {
 public:
  JsonlSink(std::string path, uint64_t max_bytes) : writer_(std::move(path), max_bytes) {}

  // Opens (creating) the file. False with *error when it cannot be opened.
  bool Open(std::string* error) { return writer_.Open(error); }

  bool MayBlock() const override { return true; }  // a FIFO, a hung network file system
  void OnHang(const HangRecord& record, SinkErrors* errors) override;
  void OnStartupStall(const report::StartupStall& record, SinkErrors* errors) override;
  void OnLag(const report::Lag& record, SinkErrors* errors) override;
  void ReleaseAfterFork() override { writer_.ReleaseAfterFork(); }

 private:
  void Append(const std::string& line, const char* type, SinkErrors* errors);

  JsonlWriter writer_;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_JSONL_SINK_H_
