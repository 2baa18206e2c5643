// The symbol index cache directory (symbol_cache.h).
#include "symbols/symbol_cache.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "symbols/regular_file.h"

namespace hangwatch::symbols {
namespace {

std::string HomeDirectory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home) return home;
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/') {
    return found->pw_dir;
  }
  return {};
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("HANGWATCH_CACHE_DIR"); d != nullptr && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x) {
    return std::string(x) + "/hangwatch";
  }
  const std::string home = HomeDirectory();
  return home.empty() ? std::string() : home + "/.cache/hangwatch";
}

std::string CacheFileFor(const std::string& cache_dir, const std::string& build_id) {
  return cache_dir + "/" + build_id + ".hwsym";
}

absl::Status CheckCacheDir(const std::string& dir) {
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(dir, ": ", std::strerror(errno)));
  }
  std::string at = real;
  for (bool innermost = true;; innermost = false) {
    struct stat st;
    if (lstat(at.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(at, ": not a directory"));
    }
    // The cache itself: only we (or root) write there. Above it: a directory others may write
    // into protects ours only with the sticky bit (nobody else can rename it away).
    if (!WritableOnlyByUs(st) &&
        (innermost || (st.st_mode & S_ISVTX) == 0 || (st.st_uid != geteuid() && st.st_uid != 0))) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: owned by uid %d, mode %04o: another user can write there", at,
                          st.st_uid, st.st_mode & 07777));
    }
    if (at == "/") return absl::OkStatus();
    const size_t slash = at.rfind('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
}

absl::Status WriteCacheFile(const std::string& dir, const std::string& name, std::string_view bytes,
                            mode_t mode) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return absl::InternalError(absl::StrCat(dir, ": ", std::strerror(errno)));
  const std::string tmp = absl::StrCat(name, ".tmp.", getpid());
  const int fd =
      ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    ::close(dfd);
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, "/", tmp, ": ", std::strerror(err)));
  }
  bool ok = true;
  for (size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  absl::Status status = absl::OkStatus();
  if (!ok) {
    status = absl::InternalError(absl::StrCat("cannot write ", dir, "/", tmp));
  } else if (::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
    status = absl::InternalError(
        absl::StrCat("cannot rename ", dir, "/", tmp, " to ", name, ": ", std::strerror(errno)));
  }
  if (!status.ok()) ::unlinkat(dfd, tmp.c_str(), 0);
  ::close(dfd);
  return status;
}

}  // namespace hangwatch::symbols
