// FormatText: the human-readable report, the sections of an Apple crash report for hangs:
// header, duration, CPU, class, dominant stack with per-frame sample counts, other stacks,
// timeline, thread state, binary images with build-ids. FormatSummary: its short form.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hangwatch/hangwatch.h"
#include "report/cause_kinds.h"
#include "report/cause_text.h"
#include "report/context_text.h"
#include "report/names.h"
#include "report/record_types.h"
#include "report/report_record.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/hang_rate.h"
#include "tools/reader/report_frames.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {
namespace {

void Appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
}

void AppendFrameLine(std::string* out, size_t index, const Frame& f, const char* prefix) {
  const std::string loc = FrameLocation(f);
  if (IsInterpreted(f.language)) {
    // An interpreter's function, as py-spy prints a Python one: its name and where; no address
    // (a code object's would mean nothing to the reader).
    // A line that is where the function begins, not the one it ran (JavaScript's compiled code):
    // said, so that nobody looks for the stall on it.
    Appendf(out, "%s#%-2zu %-28s %-18s %s%s%s%s\n", prefix, index, FrameLanguageName(f.language),
            "", f.symbol.empty() ? "?" : f.symbol.c_str(), loc.empty() ? "" : "  ", loc.c_str(),
            f.line_is_definition && f.line > 0 ? "  [the function's first line]" : "");
    return;
  }
  // A frame found by scanning the stack is a good guess, not a certainty: say so.
  const bool guessed = f.method == FrameMethod::kFramePointerScan;
  Appendf(out, "%s#%-2zu %-28s %-18s %s%s%s%s\n", prefix, index,
          std::string(report::ModuleFileName(f.module)).c_str(), Hex(f.addr).c_str(),
          FrameName(f).c_str(), loc.empty() ? "" : "  ", loc.c_str(),
          guessed ? "  [found by stack scan]" : "");
}

bool IsMainThread(const HangRecord& h) {
  return report::RoleOrMain(h.thread_role) == report::kMainRole;
}

void AppendHeader(std::string* out, const HangRecord& h) {
  // The name users know it by, when it is not the executable's (a symlink, a rewritten title).
  const std::string name =
      h.process_name.empty() || h.process_name == report::ModuleFileName(h.process)
          ? ""
          : " (" + h.process_name + ")";
  Appendf(out, "Process:          %s [%lld]%s\n", h.process.empty() ? "?" : h.process.c_str(),
          static_cast<long long>(h.pid), name.c_str());
  if (IsMainThread(h)) {
    Appendf(out, "Thread:           %lld (main thread)\n", static_cast<long long>(h.tid));
  } else {
    // A watched thread other than main (hangwatch/threads.h): its role, tid and own name.
    out->append("Thread:           " + h.thread_role + " (tid " + std::to_string(h.tid) +
                (h.thread_name.empty() ? "" : ", name " + h.thread_name) + ")\n");
  }
  Appendf(out, "Hang:             #%llu%s, fingerprint %s\n",
          static_cast<unsigned long long>(h.hang_id),
          h.fatal ? " (FATAL: the process died in it)" : "",
          h.fingerprint.empty() ? "-" : h.fingerprint.c_str());
  if (const Culprit c = HangCulprit(h); !c.empty()) {
    Appendf(out, "Culprit:          %s%s%s\n",
            CulpritLabel(c, CulpritLabelStyle::kPathFileLine).c_str(),
            c.module.empty() ? "" : " in ", std::string(report::ModuleFileName(c.module)).c_str());
  }
  if (!h.cause.empty()) {
    // The summary may be longer than Appendf's buffer.
    out->append("Waiting for:      " + h.cause.summary + "\n");
    if (!h.cause.kernel_stack.empty()) {
      out->append("Kernel stack:     " + h.cause.kernel_stack + "\n");
    }
  }
  // What the pass was serving, and whether a person waited (docs/report-format.md).
  if (const std::string c = report::DescribeContext(h.context); !c.empty()) {
    out->append("Context:          " + c + "\n");
  }
  if (const std::string in = report::DescribeInput(h); !in.empty()) {
    out->append("Input:            " + in + "\n");
  }
  if (h.queued_ms >= 0) {
    out->append("Queued:           " + report::WaitText(static_cast<uint64_t>(h.queued_ms)) +
                " before its pass ran\n");
  }
  if (!h.signature.empty()) Appendf(out, "Signature:        %s\n", h.signature.c_str());
  Appendf(out, "Date/Time:        %s\n", FormatUnixMs(h.start_unix_ms).c_str());
  Appendf(out, "Duration:         %llu ms%s (threshold %u ms)\n",
          static_cast<unsigned long long>(h.duration_ms), h.fatal ? " or more" : "",
          h.threshold_ms);
  if (h.stopped_ms > 0) {
    Appendf(out, "Stopped:          %llu ms not counted (process stopped / suspended)\n",
            static_cast<unsigned long long>(h.stopped_ms));
  }
  Appendf(out, "CPU:              %llu ms (%u%%)\n", static_cast<unsigned long long>(h.cpu_ms),
          h.cpu_percent);
  Appendf(out, "Class:            %s\n", HangClassName(h.hang_class));
  if (h.phase == HangPhase::kShutdown) {
    out->append("Phase:            shutdown (a pass the process's exit ended)\n");
  } else if (h.phase == HangPhase::kStartup) {
    out->append("Phase:            startup (before the run loop's first wait)\n");
  } else {
    out->append("Phase:            run\n");
  }
  Appendf(out, "Samples:          %u every %u ms (%u failed, %u not stored), %zu unique stacks\n",
          h.samples, h.sample_interval_ms, h.failed_samples, h.dropped_stacks, h.stacks.size());
  Appendf(out, "Monitor pause:    %llu us (the %s thread's, for hangwatch's captures)\n",
          static_cast<unsigned long long>(h.monitor_pause_us),
          std::string(report::RoleOrMain(h.thread_role)).c_str());
}

// The threads of the cause, each printed like a second thread of a crash report: a lock's
// owner (and the owners after it), or every thread of a deadlock.
void AppendCauseThreads(std::string* out, const HangRecord& h, size_t max_frames) {
  const Cause& c = h.cause;
  const bool deadlock = report::CauseHasCycle(c.kind);
  const std::vector<CauseThread>& threads = deadlock ? c.cycle : c.chain;
  if (threads.empty()) return;
  if (deadlock) Appendf(out, "\nDeadlock: %zu threads wait for each other\n", threads.size());
  for (const CauseThread& t : threads) {
    std::string title = "\nThread " + std::to_string(t.tid) + " \"" + t.name + "\"";
    if (t.tid == h.tid) {
      title += IsMainThread(h) ? " (main thread)" : " (the " + h.thread_role + " thread)";
    }
    if (!t.holds.empty()) title += ", holds " + report::DescribeLock(t.holds);
    if (!t.wants.empty()) title += ", wants " + report::DescribeLock(t.wants);
    title += ", " + (t.syscall.empty() ? std::string("running") : "in " + t.syscall) + ":\n";
    out->append(title);
    if (t.tid == h.tid && t.frames.empty()) {
      out->append("  (the dominant stack above)\n");
      continue;
    }
    if (t.frames.empty()) out->append("  (no stack captured)\n");
    for (size_t i = 0; i < t.frames.size() && i < max_frames; ++i) {
      AppendFrameLine(out, i, t.frames[i], "  ");
    }
    if (t.frames.size() > max_frames) {
      Appendf(out, "  ... %zu more frames\n", t.frames.size() - max_frames);
    }
  }
}

void AppendDominant(std::string* out, const HangRecord& h, size_t max_frames) {
  const Stack* d = h.dominant();
  if (d == nullptr) {
    out->append("\nNo stack was captured.\n");
    return;
  }
  Appendf(out, "\nDominant stack: %u of %u samples, seen %u..%u ms, CPU %llu ms\n", d->count,
          h.samples, d->first_seen_ms, d->last_seen_ms,
          static_cast<unsigned long long>(d->cpu_us / 1000));
  const std::vector<uint32_t> counts = DominantPathCounts(h);
  for (size_t i = 0; i < d->frames.size() && i < max_frames; ++i) {
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "  %5u  ", counts[i]);
    AppendFrameLine(out, i, d->frames[i], prefix);
  }
  if (d->frames.size() > max_frames) {
    Appendf(out, "  ... %zu more frames\n", d->frames.size() - max_frames);
  }
}

void AppendOtherStacks(std::string* out, const HangRecord& h) {
  if (h.stacks.size() <= 1) return;
  out->append("\nOther stacks (samples: innermost frames):\n");
  size_t shown = 0;
  for (const Stack& s : h.stacks) {
    if (s.id == h.dominant_stack) continue;
    if (++shown > 10) {
      Appendf(out, "  ... %zu more stacks\n", h.stacks.size() - 11);
      break;
    }
    std::string top;
    for (size_t i = 0; i < s.frames.size() && i < 4; ++i) {
      if (i) top += " <- ";
      top += FrameName(s.frames[i]);
    }
    Appendf(out, "  %5u  %s\n", s.count, top.c_str());
  }
}

// One row per tenth of the hang: the scheduler states and stacks seen in it.
void AppendTimeline(std::string* out, const HangRecord& h) {
  if (h.timeline.empty()) return;
  // What the watchdog saw is the hang's class: a blocked hang was never "busy".
  const char* what = h.hang_class == HangClass::kUnknown ? "" : HangClassName(h.hang_class);
  Appendf(out,
          "\nTimeline of the %s%spass (ms since it began; state letters per sample, "
          "stack ids):\n",
          what, *what != '\0' ? " " : "");
  const uint32_t end = std::max<uint32_t>(h.timeline.back().t_ms + 1, 1);
  const uint32_t step = std::max<uint32_t>((end + 9) / 10, 1);
  size_t i = 0;
  for (uint32_t from = 0; from < end && i < h.timeline.size(); from += step) {
    std::string states, stacks;
    std::set<int> seen;
    while (i < h.timeline.size() && h.timeline[i].t_ms < from + step) {
      if (states.size() < 40) states.push_back(h.timeline[i].state);
      if (seen.insert(h.timeline[i].stack).second) {
        stacks +=
            (stacks.empty() ? "" : " ") +
            (h.timeline[i].stack < 0 ? std::string("-") : std::to_string(h.timeline[i].stack));
      }
      ++i;
    }
    if (states.empty()) continue;
    Appendf(out, "  %6u..%-6u  %-12s  stacks %s\n", from, from + step, states.c_str(),
            stacks.c_str());
  }
  if (h.timeline_truncated)
    out->append("  (timeline truncated; stack counts include all samples)\n");
}

void AppendThreadState(std::string* out, const HangRecord& h) {
  if (h.timeline.empty()) return;
  std::map<char, size_t> states;
  for (const auto& e : h.timeline) ++states[e.state];
  out->append("\nThread state:     ");
  bool first = true;
  for (const auto& [c, n] : states) {
    Appendf(out, "%s%c %zu%%", first ? "" : ", ", c, 100 * n / h.timeline.size());
    first = false;
  }
  out->append("  (R running, S sleeping, D uninterruptible, T stopped)\n");
  std::map<SampleMethod, size_t> methods;
  for (const auto& e : h.timeline) {
    if (e.method != SampleMethod::kUnknown) ++methods[e.method];
  }
  if (methods.empty()) return;
  out->append("Sampled by:       ");
  first = true;
  for (const auto& [m, n] : methods) {
    Appendf(out, "%s%s %zu", first ? "" : ", ", SampleMethodName(m), n);
    first = false;
  }
  out->append("  (signal: interrupted while running; proc: read asleep, not interrupted)\n");
}

void AppendImages(std::string* out, const HangRecord& h) {
  if (h.modules.empty()) return;
  out->append("\nBinary Images:\n");
  std::vector<ModuleInfo> mods = h.modules;
  std::sort(mods.begin(), mods.end(),
            [](const ModuleInfo& a, const ModuleInfo& b) { return a.base < b.base; });
  for (const ModuleInfo& m : mods) {
    Appendf(out, "  %18s  %-28s <%s>  %s\n", Hex(m.base).c_str(),
            std::string(report::ModuleFileName(m.path)).c_str(),
            m.build_id.empty() ? "no build-id" : m.build_id.c_str(), m.path.c_str());
  }
}

void AppendStartupStalls(std::string* out, const Report& r) {
  for (const StartupStall& s : r.startup_stalls) {
    Appendf(out,
            "Start-up stall:   %s [%lld] took %llu ms to reach its event loop (threshold %llu "
            "ms), %s\n\n",
            s.process.empty() ? "?" : s.process.c_str(), static_cast<long long>(s.pid),
            static_cast<unsigned long long>(s.duration_ms),
            static_cast<unsigned long long>(s.threshold_ms), FormatUnixMs(s.start_unix_ms).c_str());
  }
}

// The lag records of the report added up per thread role (never across roles: a render thread's
// passes are not the main thread's), main's first, and per process when there are several, each
// with its hang rate (hang_rate.h) over the hangs of that role.
void AppendLag(std::string* out, const Report& r) {
  if (r.lags.empty()) return;
  std::vector<std::string> roles;
  for (const Lag& l : r.lags) {
    const std::string role(report::RoleOrMain(l.thread_role));
    if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
  }
  std::stable_partition(roles.begin(), roles.end(),
                        [](const std::string& role) { return role == report::kMainRole; });
  const auto with_rate = [](std::string lag, const HangRate& rate) {
    if (rate.known()) lag += "; " + DescribeHangRate(rate);
    return lag;
  };
  for (const std::string& role : roles) {
    Lag total;  // every record of the role added (queued + running, when a record has it)
    const PassHistogram& all = total.passes;
    std::vector<std::pair<int64_t, PassHistogram>> by_pid;
    for (const Lag& l : r.lags) {
      if (report::RoleOrMain(l.thread_role) != role) continue;
      report::AddLag(&total, l);
      auto it = std::find_if(by_pid.begin(), by_pid.end(),
                             [&](const auto& p) { return p.first == l.pid; });
      if (it == by_pid.end()) it = by_pid.insert(by_pid.end(), {l.pid, PassHistogram()});
      it->second.Merge(l.passes);
    }
    const std::string title = role == report::kMainRole ? "Lag" : "Lag of thread " + role;
    uint64_t not_watched = 0;  // threads past the agent's limit (on the main thread's records)
    for (const Lag& l : r.lags) {
      if (report::RoleOrMain(l.thread_role) == role) not_watched += l.threads_not_watched;
    }
    out->append(title + ": " +
                with_rate(report::DescribeLag(all.Figures()), HangRateOf(r.hangs, r.lags, role)) +
                (not_watched == 0 ? ""
                                  : "; " + std::to_string(not_watched) +
                                        " threads asked to be watched and were not (every slot "
                                        "taken: Config::max_watched_threads)") +
                "\n");
    if (total.queued_passes > 0 || total.queued_passes_lost > 0) {
      out->append("  " +
                  report::DescribeDelay(total.delay.Figures(), total.queued_passes,
                                        total.queued_passes_lost) +
                  "\n");
    }
    if (by_pid.size() > 1) {
      for (const auto& [pid, passes] : by_pid) {
        std::vector<HangRecord> hangs;
        std::vector<Lag> lags;
        for (const HangRecord& h : r.hangs) {
          if (h.pid == pid) hangs.push_back(h);
        }
        for (const Lag& l : r.lags) {
          if (l.pid == pid) lags.push_back(l);
        }
        Appendf(out, "  pid %lld: %s\n", static_cast<long long>(pid),
                with_rate(report::DescribeLag(passes.Figures()), HangRateOf(hangs, lags, role))
                    .c_str());
      }
    }
  }
  out->push_back('\n');
}

void AppendFooter(std::string* out, const Report& r) {
  if (r.skipped_lines > 0) {
    Appendf(out, "(%zu unreadable line%s skipped; first: %s)\n", r.skipped_lines,
            r.skipped_lines == 1 ? "" : "s", r.first_error.c_str());
  }
  if (r.other_version_records > 0) {
    Appendf(out, "(%zu record%s of another format_version skipped: a newer hangwatch reads them)\n",
            r.other_version_records, r.other_version_records == 1 ? "" : "s");
  }
}

}  // namespace

std::string FormatText(const Report& report) {
  std::string out;
  AppendStartupStalls(&out, report);
  Appendf(&out, "%zu hang%s\n", report.hangs.size(), report.hangs.size() == 1 ? "" : "s");
  for (const HangRecord& h : report.hangs) {
    out.append(
        "\n==============================================================================\n");
    AppendHeader(&out, h);
    AppendDominant(&out, h, 64);
    AppendCauseThreads(&out, h, 64);
    AppendOtherStacks(&out, h);
    AppendTimeline(&out, h);
    AppendThreadState(&out, h);
    AppendImages(&out, h);
  }
  if (!report.hangs.empty()) out.push_back('\n');
  AppendLag(&out, report);
  AppendFooter(&out, report);
  return EscapeForTerminal(out);  // every field came from a report
}

std::string FormatSummary(const Report& report, size_t max_frames) {
  std::string out;
  AppendStartupStalls(&out, report);
  for (const HangRecord& h : report.hangs) {
    Appendf(&out,
            "hangwatch: %s%s%llu ms hang in %s [%lld]%s%s%s, %s, CPU %u%%, %u samples, "
            "fingerprint %s\n",
            h.fatal ? "FATAL " : "",
            h.phase == HangPhase::kShutdown  ? "shutdown-phase "
            : h.phase == HangPhase::kStartup ? "startup-phase "
                                             : "",
            static_cast<unsigned long long>(h.duration_ms),
            std::string(report::ProcessName(h.process_name, h.process)).c_str(),
            static_cast<long long>(h.pid),
            IsMainThread(h) ? "" : (" thread " + h.thread_role).c_str(),
            HangCulprit(h).empty() ? "" : " at ",
            HangCulprit(h).empty()
                ? ""
                : CulpritLabel(HangCulprit(h), CulpritLabelStyle::kPathFileLine).c_str(),
            HangClassName(h.hang_class), h.cpu_percent, h.samples,
            h.fingerprint.empty() ? "-" : h.fingerprint.c_str());
    std::string dominant;
    AppendDominant(&dominant, h, max_frames);
    out += dominant.substr(1);  // without the leading blank line
    if (!h.cause.empty()) out.append("Waiting for: " + h.cause.summary + "\n");
    if (const std::string c = report::DescribeContext(h.context); !c.empty()) {
      out.append("Context: " + c + "\n");
    }
    if (const std::string in = report::DescribeInput(h); !in.empty()) {
      out.append("Input: " + in + "\n");
    }
    AppendCauseThreads(&out, h, max_frames);
  }
  AppendFooter(&out, report);
  return EscapeForTerminal(out);
}

}  // namespace hangwatch::tools
