#include "tools/run/run_processes.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace hangwatch::tools {

std::vector<std::pair<int64_t, uint64_t>> LingeringChildren() {
  int status;
  while (waitpid(-1, &status, WNOHANG) > 0) {
  }
  std::vector<std::pair<int64_t, uint64_t>> out;
  const int64_t self = getpid();
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const int64_t pid = std::atoll(e->d_name);
    const ProcStat s = ReadProcStat(pid);
    if (s.exists && s.ppid == self && s.state != 'Z' && s.state != 'X') {
      out.emplace_back(pid, s.start_time);
    }
  }
  closedir(d);
  return out;
}

namespace {

std::string ExePath(int64_t pid) {
  char path[64], buf[4096];
  std::snprintf(path, sizeof path, "/proc/%lld/exe", static_cast<long long>(pid));
  const ssize_t n = readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// A live child of a live process of `log` that is not in the log yet but still runs its
// parent's program: a fork child that has not run yet (it writes its load line first thing,
// from the shim's fork handler; on a busy machine the child of a tmux server may get the CPU only
// after the command ended). One that has executed another program without a line runs without
// the shim and never writes one.
bool ForkChildNotLoggedYet(const LaunchLog& log) {
  std::unordered_map<int64_t, uint64_t> logged;  // pid -> start time of its newest process
  for (const auto& p : log.processes) logged[p.pid] = p.start_time;
  auto in_log = [&logged](int64_t pid, uint64_t start_time) {
    const auto it = logged.find(pid);
    return it != logged.end() && it->second == start_time;
  };
  bool found = false;
  DIR* d = opendir("/proc");
  if (d == nullptr) return false;
  while (!found) {
    const dirent* e = readdir(d);
    if (e == nullptr) break;
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const int64_t pid = std::atoll(e->d_name);
    const ProcStat s = ReadProcStat(pid);
    if (!s.exists || s.state == 'Z' || s.state == 'X' || in_log(pid, s.start_time) ||
        logged.count(s.ppid) == 0) {
      continue;
    }
    const ProcStat parent = ReadProcStat(s.ppid);
    if (!in_log(s.ppid, parent.start_time) || !IsAlive(s.ppid, parent.start_time)) continue;
    const std::string exe = ExePath(pid);
    found = !exe.empty() && exe == ExePath(s.ppid);
  }
  closedir(d);
  return found;
}

}  // namespace

bool WaitingToArm(const LaunchLog& log, const std::string& search_path) {
  for (const auto& p : log.processes) {
    if (p.ArmedImage() != nullptr || p.Last().off || !IsAlive(p.pid, p.start_time)) continue;
    // One that executed a program without the shim never will; one that passed it on to a
    // program that can load it is about to write its load line.
    const LaunchExec* exec = p.Became();
    if (exec == nullptr ||
        (exec->shim == ExecShim::kKept && WhyNotLoaded(exec->path, search_path).empty())) {
      return true;
    }
  }
  for (const auto& [pid, start_time] : LingeringChildren()) {
    bool logged = false;
    for (const auto& p : log.processes) logged |= p.pid == pid && p.start_time == start_time;
    if (!logged) return true;
  }
  return ForkChildNotLoggedYet(log);
}

void WaitForLastProcesses(const LaunchLog& log, std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  // Only those alive now are looked at again (a build logs thousands that have ended).
  std::vector<const LaunchProcess*> alive;
  for (const auto& p : log.processes) {
    if (IsAlive(p.pid, p.start_time)) alive.push_back(&p);
  }
  while (!alive.empty() && std::chrono::steady_clock::now() < deadline) {
    usleep(20000);
    alive.erase(
        std::remove_if(alive.begin(), alive.end(),
                       [](const LaunchProcess* p) { return !IsAlive(p->pid, p->start_time); }),
        alive.end());
  }
}

}  // namespace hangwatch::tools
