#include "tools/run/run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hangwatch::tools {
namespace {

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The owner named by DIR/run.pid ("PID STARTTIME\n", then "report PATH\n" when known). False
// when there is none or it is malformed.
bool ReadOwner(const std::string& dir, int64_t* pid, uint64_t* start_time,
               std::string* report = nullptr) {
  std::ifstream in(dir + "/" + kRunOwnerFile);
  long long p = 0;
  unsigned long long t = 0;
  if (!(in >> p >> t) || p <= 0) return false;
  *pid = p;
  *start_time = t;
  if (report != nullptr) {
    std::string line;
    std::getline(in, line);  // the rest of the first line
    report->clear();
    if (std::getline(in, line) && line.rfind("report ", 0) == 0) *report = line.substr(7);
  }
  return true;
}

}  // namespace

bool CreateRunDir(const std::string& parent, const std::string& report, std::string* path,
                  std::string* error) {
  std::string tmpl = parent + "/" + kRunDirPrefix + "XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    *error = "cannot create a directory in " + parent + ": " + std::strerror(errno);
    return false;
  }
  const ProcStat self = ReadProcStat(getpid());
  // Written under another name and renamed: a concurrent cleanup sees no owner (in use) or the
  // whole file, never half of it.
  const std::string tmp = tmpl + "/" + kRunOwnerFile + ".new";
  const std::string text = std::to_string(getpid()) + " " + std::to_string(self.start_time) + "\n" +
                           (report.empty() ? "" : "report " + report + "\n");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && WriteAll(fd, text);
  if (fd >= 0) ok = close(fd) == 0 && ok;
  ok = ok && rename(tmp.c_str(), (tmpl + "/" + kRunOwnerFile).c_str()) == 0;
  if (!ok) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    RemoveRunDir(tmpl);
    return false;
  }
  *path = tmpl;
  return true;
}

std::vector<int64_t> LockedOpenHangFiles(const std::string& dir) {
  // The files' identities, then the flock() holders from /proc/locks: reading them there takes
  // no lock, so a process that arms at this very moment never finds its file locked by us.
  struct File {
    dev_t dev;
    ino_t ino;
    int64_t pid;
  };
  std::vector<File> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "open-hang.", 10) != 0) continue;
      struct stat st;
      if (lstat((dir + "/" + e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        files.push_back({st.st_dev, st.st_ino, std::atoll(e->d_name + 10)});
      }
    }
    closedir(d);
  }
  std::vector<int64_t> pids;
  if (files.empty()) return pids;
  std::ifstream locks("/proc/locks");
  // "1: FLOCK  ADVISORY  WRITE 23080 fe:00:10952963 0 EOF" (a waiter has "->" after the id).
  for (std::string line; std::getline(locks, line);) {
    std::istringstream in(line);
    std::string id, kind, mode, access, pid, where;
    if (!(in >> id >> kind >> mode >> access >> pid >> where) || kind != "FLOCK") continue;
    unsigned int major = 0, minor = 0;
    unsigned long long ino = 0;
    if (std::sscanf(where.c_str(), "%x:%x:%llu", &major, &minor, &ino) != 3) continue;
    for (const File& f : files) {
      if (f.ino == ino && ::major(f.dev) == major && ::minor(f.dev) == minor &&
          std::find(pids.begin(), pids.end(), f.pid) == pids.end()) {
        pids.push_back(f.pid);
      }
    }
  }
  return pids;
}

std::vector<const LaunchProcess*> LiveProcesses(const LaunchLog& log) {
  std::vector<const LaunchProcess*> live;
  for (const auto& p : log.processes) {
    if (IsAlive(p.pid, p.start_time)) live.push_back(&p);
  }
  return live;
}

bool RunDirInUse(const std::string& dir) {
  int64_t owner = 0;
  uint64_t owner_start = 0;
  if (!ReadOwner(dir, &owner, &owner_start)) return true;
  if (IsAlive(owner, owner_start)) return true;
  if (!LiveProcesses(ReadLaunchLog(dir + "/" + kLaunchLogFile)).empty()) return true;
  return !LockedOpenHangFiles(dir).empty();
}

std::vector<std::string> RemoveStaleRunDirs(
    const std::string& parent,
    const std::function<void(const std::string& dir, const std::string& report)>& before_removal) {
  std::vector<std::string> removed;
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return removed;
  const size_t prefix = std::strlen(kRunDirPrefix);
  while (dirent* e = readdir(d)) {
    // Ours: hangwatch-run.XXXXXX (mkdtemp's six characters), a real directory of this user.
    if (std::strncmp(e->d_name, kRunDirPrefix, prefix) != 0 ||
        std::strlen(e->d_name) != prefix + 6) {
      continue;
    }
    const std::string dir = parent + "/" + e->d_name;
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) continue;
    if (RunDirInUse(dir)) continue;
    // Claimed by a lock on run.pid, held until the files are gone: a concurrent clean-up fails
    // to take it, or finds no run.pid any more.
    const int owner_fd = open((dir + "/" + kRunOwnerFile).c_str(), O_RDONLY | O_CLOEXEC);
    if (owner_fd < 0) continue;
    if (flock(owner_fd, LOCK_EX | LOCK_NB) != 0) {
      close(owner_fd);
      continue;
    }
    int64_t owner = 0;
    uint64_t owner_start = 0;
    std::string report;
    if (ReadOwner(dir, &owner, &owner_start, &report)) {  // still there: not removed meanwhile
      if (before_removal) before_removal(dir, report);
      RemoveRunDir(dir);
      removed.push_back(dir);
    }
    close(owner_fd);
  }
  closedir(d);
  return removed;
}

void RemoveRunDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        unlink((dir + "/" + e->d_name).c_str());
      }
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace hangwatch::tools
