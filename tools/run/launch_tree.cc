#include "tools/run/launch_tree.h"

#include <algorithm>

#include "report/names.h"
#include "tools/run/run_program.h"

namespace hangwatch::tools {
namespace {

constexpr char kPrefix[] = "hangwatch run: ";
// Deeper levels are printed at this depth: a long chain of forks stays readable.
constexpr size_t kMaxDepth = 16;
// Calls named per image; the rest are counted.
constexpr size_t kMaxCallsPerImage = 8;

std::string Quoted(const LaunchExec& exec) {
  return "`" + (exec.argv.empty() ? exec.path : exec.argv) + "`";
}

// "executed `ARGV`" and, when that program was not watched, why.
std::string DescribeCall(const LaunchProcess& p, const LaunchExec& exec,
                         const std::string& search_path) {
  std::string out = (exec.spawn ? "started " : "executed ") + Quoted(exec);
  switch (exec.shim) {
    case ExecShim::kStripped:
      return out + " without the shim (the launch rule: --no-inherit): not watched";
    case ExecShim::kAbsent:
      return out + " with its environment cleared (no LD_PRELOAD with the shim): not watched";
    case ExecShim::kKept:
      break;
  }
  // Kept: it loaded the shim (a later image of this process), unless this exec is the last
  // thing the process logged.
  if (p.Became() != &exec) return out;
  const std::string why = WhyNotLoaded(exec.path, search_path);
  if (why.empty() && IsAlive(p.pid, p.start_time)) {
    return out + " (" + exec.path + "), which has not loaded the shim yet";
  }
  return out + " (" + exec.path + "), which did not load the shim" + why + ": not watched";
}

// What one image did: "watched", the calls it made, why it was not watched.
std::string DescribeImage(const LaunchProcess& p, const LaunchImage& image, bool alive,
                          const std::string& search_path) {
  std::vector<std::string> parts;
  if (image.armed) parts.push_back("watched");
  if (image.off) parts.push_back("could not be watched: " + image.off_reason);
  size_t calls = 0, more = 0;
  for (const LaunchExec& exec : image.execs) {
    if (exec.failed) continue;
    if (calls++ < kMaxCallsPerImage) {
      parts.push_back(DescribeCall(p, exec, search_path));
    } else {
      ++more;
    }
  }
  if (more > 0) parts.push_back("and " + std::to_string(more) + " more");
  const bool last = &image == &p.Last();
  if (!image.armed && !image.off && calls == 0) {
    parts.push_back(image.main_joined ? WhyImageNeverArmed(image, last && alive).substr(1)
                    : last && alive   ? "not waiting for events yet"
                                      : "never waited for events");
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

void AddProcess(const LaunchLog& log, size_t index, size_t depth,
                const std::vector<std::vector<size_t>>& children, const std::string& search_path,
                std::vector<bool>* printed, std::string* out) {
  if ((*printed)[index]) return;
  (*printed)[index] = true;
  const LaunchProcess& p = log.processes[index];
  const bool alive = IsAlive(p.pid, p.start_time);
  const std::string indent(2 + 2 * std::min(depth, kMaxDepth), ' ');
  for (size_t k = 0; k < p.images.size(); ++k) {
    const LaunchImage& image = p.images[k];
    *out += kPrefix + indent;
    *out += k == 0 ? "pid " + std::to_string(p.pid) + " " : "  then ";
    *out += image.name.empty() ? "?" : image.name;
    if (!image.exe.empty()) *out += " (" + image.exe + ")";
    *out += ": " + DescribeImage(p, image, alive, search_path) + "\n";
  }
  for (size_t child : children[index]) {
    AddProcess(log, child, depth + 1, children, search_path, printed, out);
  }
}

}  // namespace

int ParentIndex(const LaunchLog& log, size_t child) {
  const LaunchProcess& c = log.processes[child];
  int best = -1;
  for (size_t i = 0; i < log.processes.size(); ++i) {
    const LaunchProcess& p = log.processes[i];
    if (i == child || p.pid != c.parent_pid || p.start_time > c.start_time) continue;
    if (best < 0 || p.start_time >= log.processes[static_cast<size_t>(best)].start_time) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::vector<UnwatchedExec> UnwatchedExecs(const LaunchLog& log) {
  std::vector<UnwatchedExec> out;
  for (const LaunchProcess& p : log.processes) {
    for (const LaunchImage& image : p.images) {
      for (const LaunchExec& exec : image.execs) {
        if (exec.failed || exec.shim == ExecShim::kKept) continue;
        const std::string argv = exec.argv.empty() ? exec.path : exec.argv;
        auto same = std::find_if(out.begin(), out.end(), [&](const UnwatchedExec& u) {
          return u.by == exec.name && u.argv == argv && u.shim == exec.shim;
        });
        if (same == out.end()) same = out.insert(out.end(), {exec.name, argv, exec.shim, 0});
        ++same->count;
      }
    }
  }
  return out;
}

std::string FormatUnwatchedExecs(const std::vector<UnwatchedExec>& execs, size_t max_lines) {
  std::string out;
  size_t rest = 0;
  for (size_t i = 0; i < execs.size(); ++i) {
    const UnwatchedExec& u = execs[i];
    if (i >= max_lines) {
      rest += u.count;
      continue;
    }
    out += kPrefix + (u.by.empty() ? std::string("?") : u.by) + " executed `" + u.argv + "`" +
           (u.count > 1 ? " " + std::to_string(u.count) + " times" : "") + " without hangwatch; " +
           (u.count > 1 ? "they were" : "it was") + " not watched" +
           (u.shim == ExecShim::kStripped ? " (the launch rule: --no-inherit)"
                                          : " (its environment was cleared of the shim)") +
           "\n";
  }
  if (rest > 0) {
    out += kPrefix + std::to_string(rest) + " more program" + (rest == 1 ? " was" : "s were") +
           " executed without hangwatch (hangwatch run --explain lists them)\n";
  }
  return out;
}

std::string FormatLaunchTree(const LaunchLog& log, int64_t root_pid, const std::string& command,
                             const std::string& search_path) {
  std::string out = std::string(kPrefix) +
                    "launch tree (every process that loaded the shim, under its parent):\n";
  const bool root_logged = std::any_of(log.processes.begin(), log.processes.end(),
                                       [&](const LaunchProcess& p) { return p.pid == root_pid; });
  if (!root_logged) {
    out += std::string(kPrefix) + "  pid " + std::to_string(root_pid) + " " +
           std::string(report::ModuleFileName(command)) + ": did not load the shim" +
           WhyNotLoaded(command, search_path) + "\n";
  }
  const size_t n = log.processes.size();
  std::vector<std::vector<size_t>> children(n);
  std::vector<bool> has_parent(n, false);
  for (size_t i = 0; i < n; ++i) {
    const int parent = ParentIndex(log, i);
    if (parent < 0) continue;
    children[static_cast<size_t>(parent)].push_back(i);
    has_parent[i] = true;
  }
  std::vector<bool> printed(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!has_parent[i]) AddProcess(log, i, 0, children, search_path, &printed, &out);
  }
  // Processes in a cycle of parents (pids reused within one clock tick): printed at the top.
  for (size_t i = 0; i < n; ++i) AddProcess(log, i, 0, children, search_path, &printed, &out);
  return out;
}

}  // namespace hangwatch::tools
