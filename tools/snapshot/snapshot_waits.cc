#include "tools/snapshot/snapshot_waits.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <utility>

#include "hangwatch/hang_record.h"
#include "report/cause_text.h"
#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

// One thread's syscall line; false when it runs (or the line is unreadable).
bool ReadSyscallLine(pid_t pid, pid_t tid, unwind::TaskSyscall* sys) {
  if (!unwind::ProcSyscallLinesAreOurs()) return false;  // the host's calls, under an emulator
  char path[64];
  char buf[256];
  unwind::TaskPath(pid, tid, "syscall", path, sizeof(path));
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
  return n > 0 && unwind::ParseTaskSyscall(buf, static_cast<size_t>(n), sys) && sys->fields == 9;
}

// Reads what one thread sleeps in now; false when it runs (or the line is unreadable). A call
// restarted after a stop is decoded as the call it restarted (ChooseCall, then the kernel wait).
bool ReadWait(pid_t pid, const WaitQuery& q, ThreadWait* t) {
  unwind::TaskSyscall after;
  if (!ReadSyscallLine(pid, q.tid, &after)) return false;
  unwind::TaskSyscall sys = ChooseCall(q.before, q.stop_nr, after, &t->restart);
  if (t->restart == Restart::kUnknown && cause::TellRestartedCall(pid, q.tid, &sys)) {
    t->restart = Restart::kKernelWait;
  }
  t->wait = cause::DecodeWaitOf(pid, sys);
  if (t->wait.nr < 0) return false;
  t->in_syscall = true;
  char call[128];
  if (t->restart == Restart::kUnknown) {
    std::snprintf(call, sizeof(call), "restart_syscall(0x%llx, 0x%llx, 0x%llx)",
                  static_cast<unsigned long long>(sys.args[0]),
                  static_cast<unsigned long long>(sys.args[1]),
                  static_cast<unsigned long long>(sys.args[2]));
  } else {
    cause::FormatCall(t->wait, call, sizeof(call));
  }
  t->call = call;
  if (t->wait.wait == cause::SyscallWait::kFutex) t->lock = cause::ResolveFutexWaitOf(pid, t->wait);
  return true;
}

CauseLock ToCauseLock(const ThreadWait& t) {
  if (!t.runtime_lock.empty()) return CauseLock{t.runtime_lock, t.lock.addr};
  return CauseLock{cause::LockTypeKey(t.lock.type), t.lock.addr};
}

CauseThread ToCauseThread(const SnapshotWaits& waits, pid_t tid) {
  CauseThread t;
  t.tid = tid;
  const auto it = waits.threads.find(tid);
  if (it != waits.threads.end()) {
    t.name = it->second.name;
    t.syscall = it->second.call;
    if (it->second.lock.type != cause::LockType::kUnknown || it->second.lock.owner != 0 ||
        !it->second.runtime_lock.empty()) {
      t.wants = ToCauseLock(it->second);
    }
  }
  return t;
}

// The owner thread `tid` waits for, when it is a thread of the snapshot; 0 otherwise.
pid_t OwnerOf(const SnapshotWaits& waits, pid_t tid) {
  const auto it = waits.threads.find(tid);
  if (it == waits.threads.end()) return 0;
  const pid_t owner = it->second.lock.owner;
  return waits.threads.count(owner) != 0 ? owner : 0;
}

// Each node has at most one outgoing edge (the owner of the one lock it waits for): walking
// from every node finds each cycle once, reported from its lowest tid.
std::vector<std::vector<pid_t>> FindCycles(const SnapshotWaits& waits) {
  std::vector<std::vector<pid_t>> cycles;
  std::set<pid_t> done;
  for (const auto& [start, unused] : waits.threads) {
    std::vector<pid_t> path;
    std::set<pid_t> on_path;
    pid_t cur = start;
    while (cur != 0 && done.count(cur) == 0 && on_path.count(cur) == 0) {
      path.push_back(cur);
      on_path.insert(cur);
      cur = OwnerOf(waits, cur);
    }
    if (cur != 0 && on_path.count(cur) != 0) {
      std::vector<pid_t> cycle(std::find(path.begin(), path.end(), cur), path.end());
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      cycles.push_back(std::move(cycle));
    }
    done.insert(path.begin(), path.end());
  }
  return cycles;
}

// "waiting for mutex 0x... held by thread N "name"", or why no holder is named.
std::string LockHolderLine(const SnapshotWaits& waits, const ThreadWait& t) {
  const CauseLock lock = ToCauseLock(t);
  if (t.lock.owner == 0) {
    const bool ownerless = t.lock.type == cause::LockType::kConditionVariable ||
                           t.lock.type == cause::LockType::kSemaphore;
    return "waiting on " + report::DescribeLock(lock) +
           (ownerless ? " (no owner: any thread may signal it)" : " (owner unknown)");
  }
  std::string s = "waiting for " + report::DescribeLock(lock) + " held by ";
  if (waits.threads.count(t.lock.owner) == 0) {
    return s + "thread " + std::to_string(t.lock.owner) + " (not in the snapshot)";
  }
  return s + report::DescribeThread(ToCauseThread(waits, t.lock.owner));
}

}  // namespace

const char* RestartName(Restart r) {
  switch (r) {
    case Restart::kKnown:
      return "known";
    case Restart::kKernelWait:
      return "kernel_wait";
    case Restart::kUnknown:
      return "unknown";
    case Restart::kNo:
      break;
  }
  return "";
}

unwind::TaskSyscall ChooseCall(const unwind::TaskSyscall& before, int64_t stop_nr,
                               const unwind::TaskSyscall& after, Restart* restart) {
  *restart = Restart::kNo;
  if (!cause::IsRestartSyscall(after.nr)) return after;
  unwind::TaskSyscall call = after;  // the restarted call's arguments, as the kernel kept them
  const bool same_call =
      before.fields == 9 && std::equal(std::begin(before.args), std::end(before.args), after.args);
  if (same_call && before.nr >= 0 && !cause::IsRestartSyscall(before.nr)) {
    call.nr = before.nr;
    *restart = Restart::kKnown;
  } else if (stop_nr >= 0 && !cause::IsRestartSyscall(stop_nr)) {
    call.nr = stop_nr;  // x86_64's orig_rax at the stop: the call, before the kernel restarted it
    *restart = Restart::kKnown;
  } else {
    *restart = Restart::kUnknown;
  }
  return call;
}

SnapshotWaits ReadSnapshotWaits(pid_t pid, const std::vector<WaitQuery>& threads) {
  SnapshotWaits waits;
  for (const WaitQuery& q : threads) {
    ThreadWait t;
    t.tid = q.tid;
    t.name = q.name;
    // A thread the snapshot's stop interrupted restarts its system call when it runs again;
    // it may still read as running for a moment.
    const int attempts = q.state == 'S' || q.state == 'D' ? 5 : 1;
    for (int attempt = 1; !ReadWait(pid, q, &t) && attempt < attempts; ++attempt) {
      const timespec pause{0, 2'000'000};
      nanosleep(&pause, nullptr);
    }
    waits.threads[q.tid] = std::move(t);
  }
  waits.deadlocks = FindCycles(waits);
  return waits;
}

void FindDeadlocks(SnapshotWaits* waits) { waits->deadlocks = FindCycles(*waits); }

std::string WaitLine(const SnapshotWaits& waits, const ThreadWait& t) {
  if (!t.runtime_lock.empty()) return LockHolderLine(waits, t);
  if (!t.in_syscall) return "";
  if (t.restart == Restart::kUnknown) {
    return "in " + t.call + ": a call interrupted by a stop and restarted; which call is not known";
  }
  if (t.wait.wait == cause::SyscallWait::kSleep) {
    std::string s = "sleeping in " + t.call;
    if (t.wait.sleep_forever) return s + ", with no end";
    if (t.wait.sleep_ns == 0) return s;
    char asked[64];
    std::snprintf(asked, sizeof(asked), ", asked for %.3f s",
                  static_cast<double>(t.wait.sleep_ns) / 1e9);
    return s + asked;
  }
  if (t.wait.wait != cause::SyscallWait::kFutex) return "in " + t.call;
  return LockHolderLine(waits, t);
}

std::vector<std::string> WaitGraphLines(const SnapshotWaits& waits) {
  std::vector<std::string> lines;
  for (const auto& [tid, t] : waits.threads) {
    const pid_t owner = OwnerOf(waits, tid);
    if (owner == 0) continue;
    lines.push_back(report::DescribeThread(ToCauseThread(waits, tid)) + " -> " +
                    report::DescribeThread(ToCauseThread(waits, owner)) + " (" +
                    report::DescribeLock(ToCauseLock(t)) + ")");
  }
  return lines;
}

std::string DeadlockLine(const SnapshotWaits& waits, const std::vector<pid_t>& cycle) {
  Cause c;
  c.kind = CauseKind::kDeadlock;
  for (pid_t tid : cycle) c.cycle.push_back(ToCauseThread(waits, tid));
  return report::DescribeCause(c, 0);
}

}  // namespace hangwatch::tools
