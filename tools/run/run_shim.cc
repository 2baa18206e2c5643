#include "tools/run/run_shim.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

constexpr char kShimName[] = "libhangwatch_preload.so";
// The loader (kShimName) loads the agent library from its own directory when a process first
// waits for events (integrations/preload/agent_entry.h).
constexpr char kAgentName[] = "libhangwatch_preload_agent.so";

std::string Resolved(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return "";
  std::string r = real;
  std::free(real);
  return r;
}

// This `hangwatch` binary: its resolved directory and its owner ("" when unknown).
struct Self {
  std::string dir;
  uid_t owner = 0;
};

Self FindSelf() {
  Self self;
  char buf[4096];
  const ssize_t n = unwind::ReadExePath(buf, sizeof buf);
  if (n <= 0) return self;
  const std::string exe(buf, static_cast<size_t>(n));
  struct stat st;
  if (stat(exe.c_str(), &st) != 0) return self;
  self.dir = exe.substr(0, exe.rfind('/'));
  self.owner = st.st_uid;
  return self;
}

// The directories a shim may come from, resolved: this binary's own, its prefix's library
// directories, and the build tree's.
std::vector<std::string> TrustedDirs(const Self& self) {
  std::vector<std::string> out;
  if (self.dir.empty()) return out;
  const std::string& dir = self.dir;
  for (const std::string& d :
       {dir, dir + "/../lib", dir + "/../lib64", dir + "/../lib/x86_64-linux-gnu",
        dir + "/../lib/aarch64-linux-gnu", dir + "/../integrations/preload"}) {
    const std::string r = Resolved(d);
    if (!r.empty()) out.push_back(r);
  }
  return out;
}

// "" when no one but root, the user running `run` and the owner of this binary (who decides
// what runs already) can change the library at `path` (resolved): the file and its directory
// are owned by one of them and writable by no one else, and so is every directory above it,
// except that a sticky directory (/tmp) may be writable by all: no one can rename what is in it
// but its owner. Else why not.
std::string Untrusted(const std::string& path, const Self& self) {
  const uid_t me = getuid();
  std::string p = path;
  for (int level = 0;; ++level) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return p + ": " + std::strerror(errno);
    if (st.st_uid != 0 && st.st_uid != me && st.st_uid != self.owner) {
      return p + " is owned by uid " + std::to_string(st.st_uid) + ", not by root or uid " +
             std::to_string(me);
    }
    const bool sticky_ancestor = level >= 2 && (st.st_mode & S_ISVTX) != 0;
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_ancestor) {
      return p + " is writable by " + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group");
    }
    if (p == "/") return "";
    const size_t slash = p.rfind('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
}

// "" when the agent library beside the shim at `shim` (resolved) is there and trusted as the
// shim is; else why not. It is loaded into the same processes, with the same rights.
std::string AgentLibraryProblem(const std::string& shim, const Self& self) {
  const std::string agent = shim.substr(0, shim.rfind('/') + 1) + kAgentName;
  if (access(agent.c_str(), R_OK) != 0) {
    return agent + " is not readable (" + std::strerror(errno) + "): " + kShimName +
           " loads it from its own directory";
  }
  if (const std::string why = Untrusted(Resolved(agent), self); !why.empty()) {
    return std::string(kAgentName) + " is refused: " + why;
  }
  return "";
}

}  // namespace

std::string FindTrustedShim(std::string* error) {
  const Self self = FindSelf();
  const std::vector<std::string> dirs = TrustedDirs(self);
  if (const char* env = std::getenv("HANGWATCH_PRELOAD_LIB"); env != nullptr && *env) {
    const std::string named = std::string("HANGWATCH_PRELOAD_LIB=") + env;
    if (access(env, R_OK) != 0) {
      *error = named + " is not readable: " + std::strerror(errno);
      return "";
    }
    const std::string real = Resolved(env);
    const std::string dir = real.substr(0, real.rfind('/'));
    bool trusted_place = false;
    for (const std::string& d : dirs) trusted_place |= d == dir;
    if (!trusted_place) {
      *error = named +
               " is refused: the shim is taken only from beside hangwatch or its installation's "
               "library directories";
      return "";
    }
    if (const std::string why = Untrusted(real, self); !why.empty()) {
      *error = named + " is refused: " + why;
      return "";
    }
    if (const std::string why = AgentLibraryProblem(real, self); !why.empty()) {
      *error = why;
      return "";
    }
    return real;
  }
  std::string refused;
  for (const std::string& d : dirs) {
    const std::string candidate = d + "/" + kShimName;
    if (access(candidate.c_str(), R_OK) != 0) continue;
    const std::string real = Resolved(candidate);
    if (const std::string why = Untrusted(real, self); !why.empty()) {
      if (refused.empty()) refused = std::string(kShimName) + " is refused: " + why;
      continue;
    }
    if (const std::string why = AgentLibraryProblem(real, self); !why.empty()) {
      if (refused.empty()) refused = why;
      continue;
    }
    return real;
  }
  *error = refused.empty()
               ? std::string("cannot find ") + kShimName + " (set HANGWATCH_PRELOAD_LIB)"
               : refused;
  return "";
}

}  // namespace hangwatch::tools
