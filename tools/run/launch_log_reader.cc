#include "tools/run/launch_log_reader.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "report/names.h"
#include "report/record_scan.h"
#include "tools/run/run_program.h"
#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

// Splits "EVENT PID PPID STARTTIME NAME\tDETAIL" (without the newline).
bool ParseLine(std::string_view line, std::string_view* event, uint64_t* pid, uint64_t* ppid,
               uint64_t* start_time, std::string_view* name, std::string_view* detail) {
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos) return false;
  *detail = line.substr(tab + 1);
  std::string_view head = line.substr(0, tab);
  std::string_view fields[4];
  for (auto& f : fields) {
    const size_t sp = head.find(' ');
    if (sp == std::string_view::npos) return false;
    f = head.substr(0, sp);
    head.remove_prefix(sp + 1);
  }
  *event = fields[0];
  *name = head;
  return report::ParseUint64(fields[1], pid) && report::ParseUint64(fields[2], ppid) &&
         report::ParseUint64(fields[3], start_time) && *pid != 0;
}

// "SHIM\tPATH\tARGV" of an exec or spawn line.
bool ParseExec(std::string_view detail, LaunchExec* exec) {
  const size_t tab1 = detail.find('\t');
  const size_t tab2 = tab1 == std::string_view::npos ? tab1 : detail.find('\t', tab1 + 1);
  if (tab2 == std::string_view::npos) return false;
  const std::string_view shim = detail.substr(0, tab1);
  if (shim == "kept") {
    exec->shim = ExecShim::kKept;
  } else if (shim == "stripped") {
    exec->shim = ExecShim::kStripped;
  } else if (shim == "absent") {
    exec->shim = ExecShim::kAbsent;
  } else {
    return false;
  }
  exec->path = std::string(detail.substr(tab1 + 1, tab2 - tab1 - 1));
  exec->argv = std::string(detail.substr(tab2 + 1));
  return true;
}

// `path`, or the first executable file of that name in `search_path` when it has no slash.
std::string Resolve(const std::string& path, const std::string& search_path) {
  if (path.empty() || path.find('/') != std::string::npos) return path;
  std::stringstream dirs(search_path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + path;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return path;
}

// True when the ELF file at `fd` has no PT_INTERP: statically linked (no dynamic linker, so
// nothing is preloaded). False for anything else, including files that are not ELF.
bool IsStaticElf(int fd) {
  unsigned char ident[EI_NIDENT];
  if (pread(fd, ident, sizeof ident, 0) != static_cast<ssize_t>(sizeof ident) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return false;
  }
  uint64_t phoff = 0, phnum = 0, phentsize = 0;
  if (ident[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh)) return false;
    phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
    if (phentsize < sizeof(Elf64_Phdr)) return false;
  } else if (ident[EI_CLASS] == ELFCLASS32) {
    Elf32_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh)) return false;
    phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
    if (phentsize < sizeof(Elf32_Phdr)) return false;
  } else {
    return false;
  }
  if (phnum == 0 || phnum > 4096) return false;
  for (uint64_t i = 0; i < phnum; ++i) {
    uint32_t type = 0;  // p_type is the first field in both classes
    if (pread(fd, &type, sizeof type, static_cast<off_t>(phoff + i * phentsize)) !=
        static_cast<ssize_t>(sizeof type)) {
      return false;
    }
    if (type == PT_INTERP) return false;
  }
  return true;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

const LaunchExec* LaunchImage::LastExec() const {
  for (auto it = execs.rbegin(); it != execs.rend(); ++it) {
    if (!it->spawn && !it->failed) return &*it;
  }
  return nullptr;
}

const LaunchImage* LaunchProcess::ArmedImage() const {
  for (auto it = images.rbegin(); it != images.rend(); ++it) {
    if (it->armed) return &*it;
  }
  return nullptr;
}

const LaunchExec* LaunchProcess::Became() const {
  return ended_in_exec ? &images.back().execs.back() : nullptr;
}

std::string LaunchProcess::NewestName() const {
  const LaunchExec* exec = Became();
  if (exec == nullptr) return Last().name;
  if (IsAlive(pid, start_time)) {
    char path[64];
    unwind::ProcPath(static_cast<pid_t>(pid), "comm", path, sizeof path);
    char comm[64];
    const ssize_t n = unwind::ReadProcFile(path, comm, sizeof comm);
    // Read after the start time: still the same process unless it ended meanwhile.
    if (n > 0 && IsAlive(pid, start_time)) {
      std::string name(comm, static_cast<size_t>(n));
      if (name.back() == '\n') name.pop_back();
      if (!name.empty()) return name;
    }
  }
  return std::string(report::ModuleFileName(exec->path));
}

const LaunchProcess* LaunchLog::Find(int64_t pid) const {
  for (auto it = processes.rbegin(); it != processes.rend(); ++it) {
    if (it->pid == pid) return &*it;
  }
  return nullptr;
}

void LaunchLog::AddUnwritten(const std::string& type, int error_number) {
  for (UnwrittenRecords& u : unwritten) {
    if (u.type == type && u.error_number == error_number) {
      ++u.count;
      return;
    }
  }
  unwritten.push_back({type, error_number, 1});
}

size_t LaunchLog::UnwrittenHangs() const {
  size_t n = 0;
  for (const UnwrittenRecords& u : unwritten) {
    if (u.type != "lag") n += u.count;
  }
  return n;
}

bool LaunchLog::AnyArmed() const {
  for (const auto& p : processes) {
    if (p.ArmedImage() != nullptr) return true;
  }
  return false;
}

LaunchLog ParseLaunchLog(std::string_view text) {
  LaunchLog log;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) break;  // torn: its writer died mid-line (or is writing)
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view event, name, detail;
    uint64_t pid = 0, ppid = 0, start_time = 0;
    if (!ParseLine(line, &event, &pid, &ppid, &start_time, &name, &detail) ||
        (event != "load" && event != "exec" && event != "spawn" && event != "execfail" &&
         event != "armed" && event != "off" && event != "unwritten" && event != "join" &&
         event != "leftout" && event != "watch" && event != "loop")) {
      ++log.skipped_lines;
      continue;
    }
    uint64_t error_number = 0;
    if (event == "unwritten") {
      // "TYPE ERRNO": counted for the run; it says nothing of the process's images.
      const size_t sp = detail.find(' ');
      if (sp == std::string_view::npos || sp == 0 ||
          !report::ParseUint64(detail.substr(sp + 1), &error_number) || error_number > 4095) {
        ++log.skipped_lines;
        continue;
      }
      const std::string type(detail.substr(0, sp));
      log.AddUnwritten(type, static_cast<int>(error_number));
      if (type != "lag") {
        for (auto it = log.processes.rbegin(); it != log.processes.rend(); ++it) {
          if (it->pid == static_cast<int64_t>(pid) && it->start_time == start_time) {
            ++it->unwritten_hangs;
            break;
          }
        }
      }
      continue;
    }
    LaunchExec exec;
    if ((event == "exec" || event == "spawn") && !ParseExec(detail, &exec)) {
      ++log.skipped_lines;
      continue;
    }
    // The process: the newest with this pid and start time (pids are reused).
    LaunchProcess* p = nullptr;
    for (auto it = log.processes.rbegin(); it != log.processes.rend(); ++it) {
      if (it->pid == static_cast<int64_t>(pid) && it->start_time == start_time) {
        p = &*it;
        break;
      }
    }
    const bool fresh = p == nullptr;
    if (fresh) {
      p = &log.processes.emplace_back();
      p->pid = static_cast<int64_t>(pid);
      p->parent_pid = static_cast<int64_t>(ppid);
      p->start_time = start_time;
    }
    p->ppid = static_cast<int64_t>(ppid);  // the newest (a daemon is re-parented)
    // A load after the first line of a process is a new image (the process executed a program
    // that loaded the shim again); so is any line after an image that executed something and
    // then logged without a load (its exec failed: the same image goes on).
    if (fresh || (event == "load" && (p->Last().loaded || !p->Last().execs.empty()))) {
      p->images.emplace_back();
    }
    p->ended_in_exec = false;
    LaunchImage& image = p->images.back();
    image.name = std::string(name);  // the newest: a program may rename itself
    if (event == "load") {
      image.loaded = true;
      image.exe = std::string(detail);
    } else if (event == "exec" || event == "spawn") {
      exec.name = image.name;
      exec.spawn = event == "spawn";
      p->ended_in_exec = !exec.spawn;
      image.execs.push_back(std::move(exec));
    } else if (event == "execfail") {
      // The call returned: the program did not run, this image goes on.
      if (!image.execs.empty()) image.execs.back().failed = true;
    } else if (event == "armed") {
      image.armed = true;
    } else if (event == "join") {
      image.main_joined = true;
      image.armed_at_join = image.armed_at_join || detail == "arm";
    } else if (event == "watch") {
      ++image.threads_watched;
    } else if (event == "loop") {
      image.main_loop = true;
    } else if (event == "leftout") {
      ++p->threads_left_out;
    } else {
      image.off = true;
      image.off_reason = std::string(detail);
    }
  }
  // Armed at the main thread's join, then no thread watched: the agent ran, idle, and nothing of
  // the program was watched (a batch Java program's main() runs on a thread that never loops).
  for (LaunchProcess& p : log.processes) {
    for (LaunchImage& image : p.images) {
      if (image.armed && image.armed_at_join && image.threads_watched == 0 && !image.main_loop) {
        image.armed = false;
        image.joined_without_loops = true;
      }
    }
  }
  return log;
}

LaunchLog ReadLaunchLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseLaunchLog(text.str());
}

ProcStat ParseProcStat(std::string_view text) {
  ProcStat s;
  unwind::TaskStat stat;
  if (!unwind::ParseTaskStat(text.data(), text.size(), &stat) || !stat.has_ppid ||
      !stat.has_start_time) {
    return s;
  }
  s.exists = true;
  s.ppid = stat.ppid;
  s.state = stat.state;
  s.start_time = stat.start_time_ticks;
  return s;
}

ProcStat ReadProcStat(int64_t pid) {
  if (pid <= 0) return {};
  char path[64];
  unwind::ProcPath(static_cast<pid_t>(pid), "stat", path, sizeof path);
  char buf[1024];
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof buf);
  if (n <= 0) return {};
  return ParseProcStat(std::string_view(buf, static_cast<size_t>(n)));
}

bool IsAlive(int64_t pid, uint64_t start_time) {
  const ProcStat s = ReadProcStat(pid);
  return s.exists && s.state != 'Z' && s.state != 'X' && s.start_time == start_time;
}

std::string WhyNotLoaded(const std::string& path, const std::string& search_path) {
  std::string file = Resolve(path, search_path);
  for (int depth = 0; depth < 4; ++depth) {
    struct stat st;
    if (stat(file.c_str(), &st) != 0) {
      return std::string(" (") + (errno == ENOENT ? "it does not exist" : std::strerror(errno)) +
             ")";
    }
    if (!S_ISREG(st.st_mode)) return " (not a regular file)";
    if (access(file.c_str(), X_OK) != 0) return " (it is not executable)";
    if (st.st_mode & (S_ISUID | S_ISGID)) {
      return " (a set-user-ID or set-group-ID program: the dynamic linker ignores LD_PRELOAD "
             "for it)";
    }
    const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char head[256] = {};
    const ssize_t n = pread(fd, head, sizeof head - 1, 0);
    const bool is_static = IsStaticElf(fd);
    close(fd);
    if (is_static) return " (a statically linked program: nothing can be preloaded into it)";
    if (n > 2 && head[0] == '#' && head[1] == '!') {
      // A script: what runs is its interpreter.
      std::string line(head + 2, static_cast<size_t>(n - 2));
      line = line.substr(0, line.find('\n'));
      const size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos) return "";
      line = line.substr(start);
      file = line.substr(0, line.find_first_of(" \t"));
      continue;
    }
    return "";
  }
  return "";
}

std::string WhyExecNotWatched(const LaunchExec& exec, const std::string& search_path) {
  switch (exec.shim) {
    case ExecShim::kStripped:
      return " without the shim (the launch rule: --no-inherit)";
    case ExecShim::kAbsent:
      return " with its environment cleared (no LD_PRELOAD with the shim)";
    case ExecShim::kKept:
      break;
  }
  return ", which did not load the shim" + WhyNotLoaded(exec.path, search_path);
}

std::string ExplainNothingWatched(const LaunchLog& log, int64_t root_pid,
                                  const std::string& command, const std::string& search_path) {
  if (log.processes.empty()) {
    return std::string(report::ModuleFileName(command)) + " did not load the shim" +
           WhyNotLoaded(command, search_path);
  }
  const LaunchProcess* root = nullptr;
  for (const auto& p : log.processes) {
    if (p.pid == root_pid) {
      root = &p;
      break;
    }
  }
  std::string out;
  const LaunchProcess* subject = root != nullptr ? root : &log.processes.front();
  const LaunchImage& last = subject->Last();
  if (last.off) {
    out = last.name + " could not be watched: " + last.off_reason;
  } else if (const LaunchExec* exec = last.LastExec()) {
    out = last.name + " never waited for events; it executed " + exec->path +
          WhyExecNotWatched(*exec, search_path);
  } else {
    out = last.name + WhyImageNeverArmed(last, /*alive=*/false);
  }
  if (subject->images.size() > 1) {
    // How it got there: "sh executed /usr/bin/python3, which executed /usr/bin/true".
    out += " (" + subject->images[0].name;
    for (size_t k = 1; k < subject->images.size(); ++k) {
      const LaunchExec* exec = subject->images[k - 1].LastExec();
      const std::string& what = exec != nullptr                  ? exec->path
                                : subject->images[k].exe.empty() ? subject->images[k].name
                                                                 : subject->images[k].exe;
      out += (k == 1 ? " executed " : ", which executed ") + what;
    }
    out += ")";
  }
  if (root == nullptr)
    out = std::string(report::ModuleFileName(command)) + " did not load the shim; " + out;
  // The others: children and daemons.
  size_t others = 0, running = 0;
  const LaunchProcess* first_running = nullptr;
  const LaunchImage* first_off = nullptr;  // one that could not be watched says why (Go)
  for (const auto& p : log.processes) {
    if (&p == subject) continue;
    ++others;
    if (IsAlive(p.pid, p.start_time)) {
      if (running++ == 0) first_running = &p;
    }
    if (first_off == nullptr && p.Last().off) first_off = &p.Last();
  }
  if (others > 0) {
    out += "; " + Plural(others, "other process", "other processes") + " loaded the shim";
    if (first_running != nullptr) {
      out += " (pid " + std::to_string(first_running->pid) + " " + first_running->Last().name +
             (running > 1 ? " and " + std::to_string(running - 1) + " more" : "") +
             " still running)";
    }
    const std::string off =
        first_off != nullptr ? first_off->name + " could not be watched: " + first_off->off_reason
                             : "";
    if (others == 1 && first_off != nullptr) {
      out += ": " + off;
    } else {
      out += others == 1 ? " and never waited for events either" : ", none waited for events";
      if (first_off != nullptr) out += " (" + off + ")";
    }
  }
  return out;
}

}  // namespace hangwatch::tools
