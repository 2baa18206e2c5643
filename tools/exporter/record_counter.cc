#include "tools/exporter/record_counter.h"

#include <string>
#include <variant>

#include "report/record_types.h"
#include "report/report_decode.h"

namespace hangwatch::tools {

RecordCounter::RecordCounter(HangMetrics* metrics)
    : parser_(/*want_labels=*/true), metrics_(metrics) {}

void RecordCounter::Count(std::string_view line) {
  TopHang h;
  switch (parser_.ParseUnpadded(line, &h)) {
    case LineKind::kHang: {
      // The fields the metrics read (hangwatch_prometheus_metrics.h): names, labels, duration,
      // class, fatal, culprit, context, perceived, the input's age.
      hang_.pid = h.pid;
      hang_.process.assign(h.process);
      hang_.process_name.assign(h.process_name);
      hang_.host.assign(h.host);
      hang_.labels.clear();
      for (const auto& [k, v] : h.labels) hang_.labels[std::string(k)] = std::string(v);
      hang_.thread_role.assign(h.role);  // the `role` label (HangMetrics), none for main
      hang_.duration_ms = h.duration_ms;
      hang_.hang_class = static_cast<HangClass>(h.hang_class & 3);
      hang_.fatal = h.fatal;
      hang_.culprit = Culprit{};
      if (h.has_culprit) {
        hang_.culprit.symbol.assign(h.culprit_symbol);
        hang_.culprit.module.assign(h.culprit_module);
        hang_.culprit.offset = h.culprit_offset;
        hang_.culprit.file.assign(h.culprit_file);
        hang_.culprit.line = static_cast<int>(h.culprit_line);
        hang_.culprit.frame = 0;
        hang_.culprit.language = h.culprit_language;
      }
      // The context's key (the metrics' ContextLabel of a context with only a label is it).
      hang_.context = Context{};
      hang_.context.label.assign(h.context_key);
      hang_.perceived.reset();
      if (h.perceived >= 0) hang_.perceived = h.perceived == 1;
      hang_.input = Input{};
      if (h.input_oldest_ms >= 0) {
        hang_.input.known = hang_.input.pending = hang_.input.oldest_known = true;
        hang_.input.oldest_ms = static_cast<uint64_t>(h.input_oldest_ms);
      }
      metrics_->AddHang(hang_, h.cause_kind);
      break;
    }
    case LineKind::kOtherRecord: {
      if (!h.lag) break;  // a start-up stall: no metric of its own
      report::Record record;
      std::string error;
      auto* lag =
          report::Decode(line, &record, &error) ? std::get_if<report::Lag>(&record) : nullptr;
      if (lag == nullptr) {
        metrics_->Skip(kSkipTorn);  // its buckets are not what the format says
        break;
      }
      // Each role's passes are series of their own, never added to main's.
      metrics_->AddLag(lag->process_name, lag->host, lag->labels, lag->start_unix_ms,
                       lag->end_unix_ms, lag->passes, lag->thread_role,
                       lag->queued_passes > 0 ? &lag->delay : nullptr);
      break;
    }
    case LineKind::kBad:
      metrics_->Skip(kSkipTorn);
      break;
    case LineKind::kUnknownType:
      metrics_->Skip(kSkipUnknownType);
      break;
    case LineKind::kOtherVersion:
      metrics_->Skip(kSkipOtherVersion);
      break;
    case LineKind::kEmpty:
      break;
  }
}

std::string_view SkipReason(ReportFollower::Event event) {
  switch (event) {
    case ReportFollower::Event::kUnreadable:
      return kSkipUnreadable;
    case ReportFollower::Event::kTorn:
      return kSkipTorn;
    case ReportFollower::Event::kTooLong:
      return kSkipTooLong;
  }
  return kSkipTorn;
}

}  // namespace hangwatch::tools
