#include "agent/sinks/spdlog_reporter.h"

#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "report/cause_kinds.h"
#include "report/frame_classifier.h"
#include "report/stack_identity.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace hangwatch::agent {

std::shared_ptr<spdlog::logger> DefaultLogger() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get("hangwatch")) {
    return existing;
  }
  return spdlog::stderr_color_mt("hangwatch");
}

std::string HangSummaryLine(const HangRecord& r) {
  char buf[640];
  // "the main thread (tid N)", or "thread render (tid N, name X)" for another watched thread.
  const bool main = r.thread_role.empty() || r.thread_role == "main";
  const std::string thread = main ? "the main thread (tid " + std::to_string(r.tid) + ")"
                                  : "thread " + r.thread_role + " (tid " + std::to_string(r.tid) +
                                        (r.thread_name.empty() ? "" : ", name " + r.thread_name) +
                                        ")";
  std::snprintf(
      buf, sizeof(buf),
      "%s%" PRIu64
      " ms on %s: CPU %u%% (%s), %u samples%s, "
      "%zu unique stack%s, fingerprint %s",
      r.fatal ? "FATAL hang (the process died during it): at least " : "hang: ", r.duration_ms,
      thread.c_str(), r.cpu_percent, HangClassName(r.hang_class), r.samples,
      r.failed_samples > 0 ? (" + " + std::to_string(r.failed_samples) + " failed").c_str() : "",
      r.stacks.size(), r.stacks.size() == 1 ? "" : "s",
      r.fingerprint.empty() ? "-" : r.fingerprint.c_str());
  std::string line = buf;
  if (r.stopped_ms > 0) {
    line += " (" + std::to_string(r.stopped_ms) + " ms stopped, not counted)";
  }
  if (!r.culprit.empty()) {
    line += ", in " + CulpritLabel(r.culprit, CulpritLabelStyle::kName);
    if (!r.culprit.file.empty()) {
      line += " at " + r.culprit.file +
              (r.culprit.line > 0 ? ":" + std::to_string(r.culprit.line) : std::string());
    }
    if (!r.culprit.module.empty())
      line += " (" + std::string(report::ModuleFileName(r.culprit.module)) + ")";
  }
  if (!r.process_name.empty()) line += ", process " + r.process_name;
  return line;
}

std::string FrameLine(size_t index, const Frame& f) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "#%-2zu 0x%" PRIx64 " ", index, f.addr);
  std::string line = buf;
  line += f.symbol.empty() ? "??" : f.symbol;
  if (!f.module.empty()) {
    std::snprintf(buf, sizeof(buf), "+0x%" PRIx64 ")", f.offset);
    line += " (" + std::string(report::ModuleFileName(f.module)) + buf;
  }
  if (!f.file.empty()) {
    line += " " + f.file + ":" + std::to_string(f.line);
  }
  return line;
}

void LogHang(spdlog::logger& logger, const HangRecord& r) {
  logger.warn("{}", HangSummaryLine(r));
  if (!r.cause.empty()) logger.info("  waiting for: {}", r.cause.summary);
  const Stack* dominant = r.dominant();
  if (dominant == nullptr) {
    logger.info("  no stack captured ({} failed captures)", r.failed_samples);
  } else {
    logger.info("  dominant stack: {} of {} samples, seen {}..{} ms, CPU {} ms", dominant->count,
                r.samples, dominant->first_seen_ms, dominant->last_seen_ms,
                dominant->cpu_us / 1000);
    for (size_t i = 0; i < dominant->frames.size(); ++i) {
      logger.info("    {}", FrameLine(i, dominant->frames[i]));
    }
  }
  // The threads of the cause (a lock's owner, a deadlock's cycle), each like a second thread.
  for (const CauseThread& t : report::CauseHasCycle(r.cause.kind) ? r.cause.cycle : r.cause.chain) {
    if (t.tid == r.tid) continue;  // the main thread: the stack above
    logger.info("  thread {} \"{}\" ({}):", t.tid, t.name,
                t.syscall.empty() ? std::string("running") : "in " + t.syscall);
    for (size_t i = 0; i < t.frames.size(); ++i) {
      logger.info("    {}", FrameLine(i, t.frames[i]));
    }
  }
}

void LogLag(spdlog::logger& logger, const report::Lag& record) {
  const double seconds = static_cast<double>(record.end_unix_ms - record.start_unix_ms) / 1000;
  const bool main = record.thread_role.empty() || record.thread_role == "main";
  logger.info("hangwatch: lag {}over {:.1f} s: {}{}",
              main ? "" : "of thread " + record.thread_role + " ", seconds,
              report::DescribeLag(record.passes.Figures()),
              record.threads_not_watched == 0 ? ""
                                              : "; " + std::to_string(record.threads_not_watched) +
                                                    " threads not watched (every slot taken)");
}

}  // namespace hangwatch::agent
