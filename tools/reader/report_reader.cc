// ParseJsonLines and friends: a JSON Lines text cut into lines, each decoded by the report
// codec (report/report_decode.h) and filed into a Report.
#include "tools/reader/report_reader.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "report/record_types.h"
#include "report/report_decode.h"
#include "tools/reader/line_reader.h"

namespace hangwatch::tools {
namespace {

// Files each decoded record into its list of the report.
struct AddTo {
  Report* report;
  void operator()(HangRecord&& h) const {
    NoteInputWait(h, report);
    report->hangs.push_back(std::move(h));
  }
  void operator()(StartupStall&& s) const { report->startup_stalls.push_back(std::move(s)); }
  void operator()(Lag&& l) const { report->lags.push_back(std::move(l)); }
  void operator()(report::UnknownRecord&& u) const {
    ++report->unknown_records;
    if (u.other_version) ++report->other_version_records;
  }
};

}  // namespace

bool ParseHangLine(std::string_view line, HangRecord* out, std::string* error) {
  return report::DecodeHang(line, out, error);
}

void JsonLinesParser::Add(std::string_view line) {
  ++line_no_;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.empty()) return;
  ++nonempty_;
  std::string why;
  report::Record record;
  if (report::Decode(line, &record, &why)) {
    std::visit(AddTo{out_}, std::move(record));
    ++valid_;
  } else {
    if (out_->first_error.empty())
      out_->first_error = "line " + std::to_string(line_no_) + ": " + why;
    ++out_->skipped_lines;
  }
}

void JsonLinesParser::AddTooLong() {
  ++line_no_;
  ++nonempty_;
  if (out_->first_error.empty()) {
    out_->first_error = "line " + std::to_string(line_no_) + ": longer than " +
                        std::to_string(kMaxLineBytes >> 20) + " MiB";
  }
  ++out_->skipped_lines;
}

bool JsonLinesParser::Finish(std::string* error) const {
  if (nonempty_ > 0 && valid_ == 0) {
    *error = "no valid record (" + out_->first_error + ")";
    return false;
  }
  return true;
}

bool ParseJsonLines(std::string_view text, Report* out, std::string* error) {
  JsonLinesParser parser(out);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    parser.Add(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return parser.Finish(error);
}

void NoteInputWait(const HangRecord& h, Report* report) {
  if (!h.input.known || !h.input.oldest_known || h.input.events == 0) return;
  uint64_t& longest = report->input_waited_ms[std::string(report::RoleOrMain(h.thread_role))];
  longest = std::max<uint64_t>(longest, h.input.oldest_ms);
}

void MergeReport(Report&& from, Report* into) {
  for (const auto& [role, ms] : from.input_waited_ms) {
    into->input_waited_ms[role] = std::max(into->input_waited_ms[role], ms);
  }
  for (auto& h : from.hangs) into->hangs.push_back(std::move(h));
  for (auto& s : from.startup_stalls) into->startup_stalls.push_back(std::move(s));
  for (auto& l : from.lags) into->lags.push_back(std::move(l));
  into->skipped_lines += from.skipped_lines;
  into->unknown_records += from.unknown_records;
  into->other_version_records += from.other_version_records;
  into->dwarf_source_files.merge(from.dwarf_source_files);
  if (into->first_error.empty()) into->first_error = std::move(from.first_error);
}

}  // namespace hangwatch::tools
