#include "tools/exporter/record_counter.h"

#include <nlohmann/json.hpp>
#include <variant>

#include "report/report_decode.h"

namespace hangwatch::tools {

std::string CauseKindOf(std::string_view line) {
  // Most hangs carry no cause: the line is parsed a second time only when it names one.
  if (line.find("\"cause\"") == std::string_view::npos) return "";
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  const auto cause = j.find("cause");
  if (cause == j.end() || !cause->is_object()) return "";
  const auto kind = cause->find("kind");
  if (kind == cause->end() || !kind->is_string()) return "";
  return kind->get<std::string>();
}

void CountLine(std::string_view line, HangMetrics* metrics) {
  report::Record record;
  std::string error;
  if (!report::Decode(line, &record, &error)) {
    metrics->Skip(kSkipTorn);
  } else if (const auto* hang = std::get_if<HangRecord>(&record)) {
    metrics->AddHang(*hang, CauseKindOf(line));
  } else if (const auto* lag = std::get_if<report::Lag>(&record)) {
    metrics->AddLag(lag->process_name, lag->host, lag->labels, lag->start_unix_ms, lag->end_unix_ms,
                    lag->passes);
  } else if (const auto* unknown = std::get_if<report::UnknownRecord>(&record)) {
    metrics->Skip(unknown->other_version ? kSkipOtherVersion : kSkipUnknownType);
  }
  // Start-up stalls have no metric of their own.
}

}  // namespace hangwatch::tools
