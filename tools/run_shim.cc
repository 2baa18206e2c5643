#include "tools/run_shim.h"

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

std::string Resolved(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return "";
  std::string r = real;
  std::free(real);
  return r;
}

// The directories a shim may come from, resolved: this binary's own, its prefix's library
// directories, and the build tree's.
std::vector<std::string> TrustedDirs() {
  std::vector<std::string> out;
  char buf[4096];
  const ssize_t n = unwind::ReadExePath(buf, sizeof buf);
  if (n <= 0) return out;
  std::string self(buf, static_cast<size_t>(n));
  const std::string dir = self.substr(0, self.rfind('/'));
  for (const std::string& d :
       {dir, dir + "/../lib", dir + "/../lib64", dir + "/../lib/x86_64-linux-gnu",
        dir + "/../lib/aarch64-linux-gnu", dir + "/../integrations/preload"}) {
    const std::string r = Resolved(d);
    if (!r.empty()) out.push_back(r);
  }
  return out;
}

// Owned by root or by us, and writable by no one else: the file and the directory it is in.
// "" when so, else why not.
std::string Untrusted(const std::string& path) {
  const uid_t me = getuid();
  const std::string dir = path.substr(0, path.rfind('/'));
  for (const std::string& p : {path, dir.empty() ? std::string("/") : dir}) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return p + ": " + std::strerror(errno);
    if (st.st_uid != 0 && st.st_uid != me) {
      return p + " is owned by uid " + std::to_string(st.st_uid) + ", not by root or uid " +
             std::to_string(me);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return p + " is writable by " + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group");
    }
  }
  return "";
}

}  // namespace

std::string FindTrustedShim(std::string* error) {
  const std::vector<std::string> dirs = TrustedDirs();
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
    if (const std::string why = Untrusted(real); !why.empty()) {
      *error = named + " is refused: " + why;
      return "";
    }
    return real;
  }
  std::string refused;
  for (const std::string& d : dirs) {
    const std::string candidate = d + "/" + kShimName;
    if (access(candidate.c_str(), R_OK) != 0) continue;
    const std::string real = Resolved(candidate);
    if (const std::string why = Untrusted(real); !why.empty()) {
      if (refused.empty()) refused = why;
      continue;
    }
    return real;
  }
  *error = refused.empty()
               ? std::string("cannot find ") + kShimName + " (set HANGWATCH_PRELOAD_LIB)"
               : std::string(kShimName) + " is refused: " + refused;
  return "";
}

}  // namespace hangwatch::tools
