#include "report/cause_text.h"

#include <cstdio>
#include <string>

#include "hangwatch/culprit_label.h"
#include "report/cause_kinds.h"
#include "report/frame_classifier.h"

namespace hangwatch::report {
namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The JSON key of a lock type in words.
std::string LockWords(const std::string& key) {
  if (key == "recursive_mutex") return "recursive mutex";
  if (key == "errorcheck_mutex") return "error-checking mutex";
  if (key == "adaptive_mutex") return "adaptive mutex";
  if (key == "robust_mutex") return "robust mutex";
  if (key == "pi_mutex") return "priority-inheritance mutex";
  if (key == "condition_variable") return "condition variable";
  if (key == "unknown" || key.empty()) return "futex";
  return key;  // mutex, rwlock, semaphore
}

// "machine pressure: cpu (some avg10 45.0 %)": the resource the machine stalled on most during
// the hang, with its 10-second average at the end (left out when it is 0: no /proc/pressure).
std::string MachinePressure(const Cause& c) {
  std::string s = "machine pressure: " + c.pressure_resource;
  if (c.pressure_some_avg10 <= 0) return s;
  char avg[32];
  std::snprintf(avg, sizeof(avg), "%.1f", c.pressure_some_avg10);
  return s + " (some avg10 " + avg + " %)";
}

// The figures of a busy hang's refinements other than its kind's own, as "; ..." clauses: a
// starved hang in a throttled cgroup, on a machine short of CPU or with major faults says so.
std::string OtherSchedulingFigures(const Cause& c) {
  std::string s;
  if (c.kind != CauseKind::kThrottled && c.nr_throttled > 0) {
    s += "; the cgroup's CPU quota throttled the process " + std::to_string(c.nr_throttled) +
         " times, for " + std::to_string(c.throttled_ms) + " ms";
  }
  if (c.kind != CauseKind::kPressure && !c.pressure_resource.empty())
    s += "; " + MachinePressure(c);
  if (c.kind != CauseKind::kFault && c.major_faults > 0) {
    s += "; " + std::to_string(c.major_faults) + " major page faults";
  }
  return s;
}

}  // namespace

std::string DescribeLock(const CauseLock& l) { return LockWords(l.type) + " " + Hex(l.addr); }

std::string DescribeThread(const CauseThread& t) {
  return "thread " + std::to_string(t.tid) + " \"" + t.name + "\"";
}

std::string DescribeActivity(const CauseThread& t) {
  std::string s = t.syscall.empty() ? "running" : "in " + t.syscall;
  if (!t.culprit.empty())
    s += " \u2190 " + CulpritLabel(t.culprit, CulpritLabelStyle::kBaseFileLine);
  return s;
}

std::string DescribeCause(const Cause& c, uint64_t duration_ms, std::string_view thread_role) {
  const CauseKindRow* row = FindCauseKind(c.kind);
  std::string text = row != nullptr ? row->text(c, duration_ms) : "";
  if (!thread_role.empty() && thread_role != "main") {
    static constexpr std::string_view kMain = "on the main thread";
    if (const size_t at = text.find(kMain); at != std::string::npos) {
      text.replace(at, kMain.size(), "on thread " + std::string(thread_role));
    }
  }
  return text;
}

namespace cause_text {

std::string Cpu(const Cause&, uint64_t) { return "cpu"; }

std::string Lock(const Cause& c, uint64_t) {
  if (!c.has_owner) {
    const std::string why = c.lock.type == "condition_variable" || c.lock.type == "semaphore"
                                ? "no owner: any thread may signal it"
                                : "owner unknown";
    return "waiting on " + DescribeLock(c.lock) + " (" + why + ")";
  }
  std::string s = "waiting for " + DescribeLock(c.lock);
  for (size_t i = 0; i < c.chain.size(); ++i) {
    const CauseThread& t = c.chain[i];
    s += " held by " + DescribeThread(t) + ", which ";
    if (i + 1 < c.chain.size()) {
      s += "waits for " + DescribeLock(t.wants);
    } else {
      s += "is " + DescribeActivity(t);
    }
  }
  if (c.chain_truncated) s += " (the chain goes on)";
  return s;
}

std::string Deadlock(const Cause& c, uint64_t) {
  std::string s = "deadlock of " + std::to_string(c.cycle.size()) + " threads: ";
  for (size_t i = 0; i < c.cycle.size(); ++i) {
    const CauseThread& t = c.cycle[i];
    const CauseThread& next = c.cycle[(i + 1) % c.cycle.size()];
    s += (i == 0 ? DescribeThread(t) : std::string(", which")) + " wants " + DescribeLock(t.wants) +
         " held by " + DescribeThread(next);
  }
  return s;
}

std::string Child(const Cause& c, uint64_t) {
  if (c.child.pid == 0) return "waiting for a child process (" + c.syscall + ")";
  std::string s = "waiting for child " + std::to_string(c.child.pid) + " \"" + c.child.name + "\"";
  if (c.child.state != '?' && c.child.state != 0) {
    s += " (state ";
    s.push_back(c.child.state);
    s += ")";
  }
  return s;
}

std::string Sleep(const Cause& c, uint64_t duration_ms) {
  if (c.sleep_forever) return "sleeping on the main thread with no timeout (" + c.syscall + ")";
  const uint64_t ms = c.sleep_ms > 0 ? c.sleep_ms : duration_ms;
  return "slept " + std::to_string(ms) + " ms on the main thread (" + c.syscall + ")";
}

std::string Io(const Cause& c, uint64_t) {
  std::string s = "waiting for I/O";
  if (!c.path.empty()) s += " on " + c.path;
  if (!c.syscall.empty()) s += " in " + c.syscall;
  if (!c.wchan.empty()) s += " (kernel: " + c.wchan + ")";
  if (c.major_faults > 0) s += ", " + std::to_string(c.major_faults) + " major page faults";
  return s;
}

std::string Ipc(const Cause& c, uint64_t) {
  std::string s = "waiting for ";
  if (c.peers.empty()) s += "the other end";
  for (size_t i = 0; i < c.peers.size(); ++i) {
    if (i > 0) s += ", ";
    s += "process " + std::to_string(c.peers[i].pid) + " \"" + c.peers[i].name + "\"";
  }
  if (!c.remote_address.empty()) {
    s += " over " + c.local_address + " -> " + c.remote_address;
  } else if (!c.path.empty()) {
    s += " over " + c.path;
  }
  if (!c.syscall.empty()) s += " in " + c.syscall;
  return s;
}

std::string Fault(const Cause& c, uint64_t) {
  std::string s = std::to_string(c.major_faults) + " major page faults";
  if (!c.mapping.empty()) s += " in " + c.mapping;
  s += ": the main thread waited for pages read in";
  if (c.run_delay_ms > 0) s += "; waited " + std::to_string(c.run_delay_ms) + " ms for a CPU";
  return s + OtherSchedulingFigures(c);
}

std::string Starved(const Cause& c, uint64_t) {
  std::string s =
      "runnable but not running: waited " + std::to_string(c.run_delay_ms) + " ms for a CPU";
  if (c.runnable_threads > 0) {
    s += ", " + std::to_string(c.runnable_threads) + " other thread" +
         (c.runnable_threads == 1 ? "" : "s") + " of the process runnable";
  }
  return s + OtherSchedulingFigures(c);
}

std::string Throttled(const Cause& c, uint64_t) {
  std::string s = "the cgroup's CPU quota throttled the process " + std::to_string(c.nr_throttled) +
                  " times, for " + std::to_string(c.throttled_ms) + " ms";
  if (c.run_delay_ms > 0) s += ": waited " + std::to_string(c.run_delay_ms) + " ms for a CPU";
  return s + OtherSchedulingFigures(c);
}

std::string Pressure(const Cause& c, uint64_t) {
  // A busy hang's CPU pressure is its own wait for a CPU (a material part of the hang, under
  // half of it); an io hang's, or memory's, the machine's stall while it was blocked.
  if (c.pressure_resource == "cpu" && c.run_delay_ms > 0) {
    return MachinePressure(c) + ": waited " + std::to_string(c.run_delay_ms) + " ms for a CPU" +
           OtherSchedulingFigures(c);
  }
  return MachinePressure(c) + ": the machine was short of " + c.pressure_resource +
         OtherSchedulingFigures(c);
}

std::string Other(const Cause& c, uint64_t) { return "in " + c.syscall; }

}  // namespace cause_text

}  // namespace hangwatch::report
