// FormatTrace: Chrome trace-event JSON ("JSON Object Format": {"traceEvents": [...]}), which
// Perfetto UI and chrome://tracing open. Each hang is a complete ("X") slice on its main
// thread's track; inside it, the sampled stacks form a flame chart: consecutive samples that
// share a caller prefix share that prefix's slices, so the nesting shows where time went.
#include <algorithm>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "report/cause_text.h"
#include "report/names.h"
#include "report/record_types.h"
#include "report/stack_identity.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

using nlohmann::json;

struct Open {
  std::string name;
  int64_t start_us;
  const Frame* frame;
};

json Slice(const std::string& name, const char* cat, int64_t ts, int64_t dur, int64_t pid,
           int64_t tid) {
  return json{{"name", name}, {"cat", cat}, {"ph", "X"}, {"ts", ts},
              {"dur", dur},   {"pid", pid}, {"tid", tid}};
}

void AddHang(const HangRecord& h, json* events) {
  const int64_t start = h.start_unix_ms * 1000;
  const int64_t dur = static_cast<int64_t>(std::max<uint64_t>(h.duration_ms, 1)) * 1000;
  const int64_t end = start + dur;
  const Culprit culprit = HangCulprit(h);
  json hang =
      Slice("hang " + std::to_string(h.duration_ms) + " ms (" + HangClassName(h.hang_class) + ")" +
                (culprit.empty() ? "" : " in " + CulpritLabel(culprit, CulpritLabelStyle::kName)),
            "hang", start, dur, h.pid, h.tid);
  hang["args"] = {{"fingerprint", h.fingerprint}, {"cpu_ms", h.cpu_ms},
                  {"cpu_percent", h.cpu_percent}, {"class", HangClassName(h.hang_class)},
                  {"samples", h.samples},         {"fatal", h.fatal}};
  if (!culprit.empty())
    hang["args"]["culprit"] = CulpritLabel(culprit, CulpritLabelStyle::kPathFileLine);
  if (!h.signature.empty()) hang["args"]["signature"] = h.signature;
  if (!h.process_name.empty()) hang["args"]["process_name"] = h.process_name;
  if (!h.cause.empty()) {
    hang["args"]["cause"] = CauseKindName(h.cause.kind);
    hang["args"]["cause_summary"] =
        h.cause.summary.empty() ? report::DescribeCause(h.cause, h.duration_ms) : h.cause.summary;
  }
  events->push_back(std::move(hang));

  // Samples: sample i covers [t_i, t_{i+1}) (the last one a sample interval), inside the hang.
  std::vector<Open> open;  // outermost first
  auto close_from = [&](size_t depth, int64_t at) {
    while (open.size() > depth) {
      const Open& o = open.back();
      if (at > o.start_us) {
        json s = Slice(o.name, "sample", o.start_us, at - o.start_us, h.pid, h.tid);
        const std::string loc = FrameLocation(*o.frame);
        if (IsInterpreted(o.frame->language)) {
          s["args"] = {
              {"kind", FrameLanguageName(
                           o.frame->language)}};  // no module, and a code object's address is noise
        } else {
          s["args"] = {{"module", o.frame->module}, {"offset", Hex(o.frame->offset)}};
        }
        if (!loc.empty()) s["args"]["location"] = loc;
        events->push_back(std::move(s));
      }
      open.pop_back();
    }
  };
  const int64_t interval = std::max<int64_t>(h.sample_interval_ms, 1) * 1000;
  // Sample times inside the hang, never going back (a damaged file may say otherwise).
  std::vector<int64_t> times(h.timeline.size());
  for (size_t i = 0; i < times.size(); ++i) {
    times[i] = std::min(start + static_cast<int64_t>(h.timeline[i].t_ms) * 1000, end);
    if (i > 0) times[i] = std::max(times[i], times[i - 1]);
  }
  for (size_t i = 0; i < h.timeline.size(); ++i) {
    const TimelineEntry& e = h.timeline[i];
    const int64_t t = times[i];
    const int64_t t_end = i + 1 < times.size() ? times[i + 1] : std::min(t + interval, end);
    if (e.stack < 0 || static_cast<size_t>(e.stack) >= h.stacks.size() || t_end <= t) {
      close_from(0, t);
      continue;
    }
    const auto& frames = h.stacks[static_cast<size_t>(e.stack)].frames;
    // Keep the open slices that match this sample's callers, outermost first.
    size_t depth = 0;
    while (depth < open.size() && depth < frames.size() &&
           open[depth].name == FrameName(frames[frames.size() - 1 - depth])) {
      ++depth;
    }
    close_from(depth, t);
    for (size_t d = depth; d < frames.size(); ++d) {
      const Frame& f = frames[frames.size() - 1 - d];
      open.push_back({FrameName(f), t, &f});
    }
    if (i + 1 == h.timeline.size()) close_from(0, t_end);
  }
  close_from(0, end);
}

// The track's name: "main thread", or a watched thread's role and its own name ("render thread
// (RenderThread)").
std::string ThreadTitle(const HangRecord& h) {
  const std::string role(report::RoleOrMain(h.thread_role));
  return role + " thread" +
         (role == report::kMainRole || h.thread_name.empty() ? std::string()
                                                             : " (" + h.thread_name + ")");
}

}  // namespace

std::string FormatTrace(const Report& report) {
  json events = json::array();
  std::vector<std::pair<int64_t, int64_t>> named;
  for (const HangRecord& h : report.hangs) {
    if (std::find(named.begin(), named.end(), std::make_pair(h.pid, h.tid)) == named.end()) {
      named.emplace_back(h.pid, h.tid);
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", h.pid},
                        {"tid", h.tid},
                        {"args",
                         {{"name", std::string(report::ProcessName(h.process_name, h.process)) +
                                       " [" + std::to_string(h.pid) + "]"}}}});
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", h.pid},
                        {"tid", h.tid},
                        {"args", {{"name", ThreadTitle(h)}}}});
    }
    AddHang(h, &events);
  }
  json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace hangwatch::tools
