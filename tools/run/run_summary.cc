#include "tools/run/run_summary.h"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "report/names.h"
#include "report/record_types.h"
#include "tools/common/junit_writer.h"
#include "tools/common/terminal_text.h"

namespace hangwatch::tools {
namespace {

WatchedProcess* FindPid(std::vector<WatchedProcess>* list, int64_t pid) {
  // The newest entry with that pid: records of a reused pid count for the later process.
  for (auto it = list->rbegin(); it != list->rend(); ++it) {
    if (it->pid == pid) return &*it;
  }
  return nullptr;
}

}  // namespace

std::vector<WatchedProcess> WatchedProcesses(const LaunchLog& log, const Report& report) {
  std::vector<WatchedProcess> out;
  for (const auto& p : log.processes) {
    const LaunchImage* image = p.ArmedImage();
    if (image == nullptr) continue;
    WatchedProcess& w = out.emplace_back();
    w.pid = p.pid;
    w.start_time = p.start_time;
    w.name = image->name;
    w.exe = image->exe;
    w.unwritten_hangs = p.unwritten_hangs;
    w.threads_left_out = p.threads_left_out;
    w.armed_at_join = image->armed_at_join && !image->main_loop;
  }
  auto entry = [&](int64_t pid, const std::string& process) -> WatchedProcess& {
    if (WatchedProcess* w = FindPid(&out, pid)) return *w;
    WatchedProcess& w = out.emplace_back();
    w.pid = pid;
    w.name = std::string(report::ModuleFileName(process));
    w.exe = process;
    return w;
  };
  for (const HangRecord& h : report.hangs) {
    WatchedProcess& w = entry(h.pid, h.process);
    ++w.hangs;
    const std::string_view role = report::RoleOrMain(h.thread_role);
    HangRate& rate =
        role == report::kMainRole ? w.hang_rate : w.other_roles[std::string(role)].hang_rate;
    rate.hang_ms += h.duration_ms;
    ++rate.hangs;
  }
  for (const StartupStall& s : report.startup_stalls) ++entry(s.pid, s.process).startup_stalls;
  for (const Lag& l : report.lags) {
    WatchedProcess& w = entry(l.pid, l.process_name);
    const std::string_view role = report::RoleOrMain(l.thread_role);
    size_t* records = &w.lag_records;
    PassHistogram* passes = &w.passes;
    HangRate* rate = &w.hang_rate;
    if (role != report::kMainRole) {
      WatchedProcess::RoleLag& r = w.other_roles[std::string(role)];
      records = &r.lag_records;
      passes = &r.passes;
      rate = &r.hang_rate;
    }
    ++*records;
    passes->Merge(l.passes);
    if (role == report::kMainRole) {
      w.delay.Merge(report::DelayOf(l));
      w.queued_passes += l.queued_passes;
    }
    if (l.end_unix_ms > l.start_unix_ms) {
      rate->watched_ms += static_cast<uint64_t>(l.end_unix_ms - l.start_unix_ms);
    }
  }
  return out;
}

std::string FormatWatched(const std::vector<WatchedProcess>& watched) {
  std::string out = "hangwatch run: watched " + std::to_string(watched.size()) +
                    (watched.size() == 1 ? " process:\n" : " processes:\n");
  for (const auto& w : watched) {
    out += "hangwatch run:   pid " + std::to_string(w.pid) + " " + (w.name.empty() ? "?" : w.name);
    if (!w.exe.empty() && w.exe != w.name) out += " (" + w.exe + ")";
    out += ": " + (w.hangs == 0 && w.unwritten_hangs == 0
                       ? std::string("no hangs")
                       : std::to_string(w.hangs + w.unwritten_hangs) +
                             (w.hangs + w.unwritten_hangs == 1 ? " hang" : " hangs"));
    if (w.unwritten_hangs > 0) {
      out += " (" + std::to_string(w.unwritten_hangs) + " not written)";
    }
    if (w.startup_stalls > 0) out += ", slow start-up";
    if (w.helper) out += ", a helper, not the program";
    if (w.running) out += ", still running";
    out += "\n";
    if (w.lag_records > 0) {
      out += "hangwatch run:     lag: " + report::DescribeLag(w.passes.Figures());
      if (w.hang_rate.known()) out += "; " + DescribeHangRate(w.hang_rate);
      out += "\n";
      if (w.queued_passes > 0) {
        out += "hangwatch run:     " + report::DescribeDelay(w.delay.Figures(), w.queued_passes) +
               "\n";
      }
    }
    // A role each, the roles that hung first; past kMaxRoleLines (`--threads loops` may watch
    // dozens of threads in one process) a count: `hangwatch report` shows every one.
    constexpr size_t kMaxRoleLines = 8;
    std::vector<const std::pair<const std::string, WatchedProcess::RoleLag>*> roles;
    for (const auto& entry : w.other_roles) {
      if (entry.second.lag_records > 0) roles.push_back(&entry);
    }
    std::stable_sort(roles.begin(), roles.end(), [](const auto* a, const auto* b) {
      return a->second.hang_rate.hangs > 0 && b->second.hang_rate.hangs == 0;
    });
    for (size_t i = 0; i < roles.size() && i < kMaxRoleLines; ++i) {
      const auto& [role, r] = *roles[i];
      out += "hangwatch run:     lag of thread " + role + ": " +
             report::DescribeLag(r.passes.Figures());
      if (r.hang_rate.known()) out += "; " + DescribeHangRate(r.hang_rate);
      out += "\n";
    }
    if (roles.size() > kMaxRoleLines) {
      out += "hangwatch run:     and the lag of " + std::to_string(roles.size() - kMaxRoleLines) +
             " more thread roles (hangwatch report shows each)\n";
    }
    if (w.armed_at_join) {
      // Said, so that a freeze of a thread it could not watch is not taken for "no hangs".
      out +=
          "hangwatch run:     its main thread waited in pthread_join (the program ran on other "
          "threads): watched are its threads that wait for events in poll, epoll or select; one "
          "that waits on a condition variable or a Java monitor (Swing's event thread) is not "
          "(docs/java.md)\n";
    }
    if (w.threads_left_out > 0) {
      out += "hangwatch run:     " + std::to_string(w.threads_left_out) +
             (w.threads_left_out == 1 ? " loop thread" : " loop threads") +
             " not watched: --threads selected more than the agent watches besides the main "
             "thread (64)\n";
    }
  }
  return EscapeForTerminal(out);  // names and paths the watched processes gave
}

std::string FormatUnwritten(const std::vector<UnwrittenRecords>& unwritten,
                            const std::string& report_path) {
  std::string out;
  for (const UnwrittenRecords& u : unwritten) {
    const bool one = u.count == 1;
    const char* what = u.type == "hang"            ? (one ? "hang" : "hangs")
                       : u.type == "startup_stall" ? (one ? "start-up stall" : "start-up stalls")
                       : u.type == "lag"           ? (one ? "lag record" : "lag records")
                                                   : (one ? "record" : "records");
    out += "hangwatch run: " + std::to_string(u.count) + " " + what + " could not be written to " +
           report_path + ": " + std::strerror(u.error_number) + "\n";
  }
  return out;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

std::string FormatJunitError(const std::string& suite, const std::string& type,
                             const std::string& message, double elapsed_s) {
  JunitCase c;
  c.classname = "hangwatch";
  c.name = "main thread watched";
  c.seconds = elapsed_s;
  c.outcome = JunitCase::Outcome::kError;
  c.type = type;
  c.message = c.body = message;
  return FormatJunitXml({"hangwatch", suite, elapsed_s, {c}});
}

}  // namespace hangwatch::tools
