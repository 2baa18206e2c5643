// RegularFile: opening only regular files, without blocking (regular_file.h).
#include "symbols/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hangwatch::symbols {
namespace {

absl::Status NotRegular(const std::string& path, mode_t mode) {
  const char* what = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISDIR(mode)  ? "a directory"
                     : S_ISLNK(mode)  ? "a symbolic link"
                                      : "not a regular file";
  return absl::FailedPreconditionError(absl::StrCat(path, ": ", what, ", not read"));
}

}  // namespace

bool WritableOnlyByUs(const struct stat& st) {
  return (st.st_uid == geteuid() || st.st_uid == 0) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

absl::StatusOr<RegularFile> RegularFile::Open(const std::string& path,
                                              const RegularFileRules& rules) {
  struct stat before;
  const int looked =
      rules.no_follow ? ::lstat(path.c_str(), &before) : ::stat(path.c_str(), &before);
  if (looked != 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (!S_ISREG(before.st_mode)) return NotRegular(path, before.st_mode);
  const int flags =
      O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (rules.no_follow ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  RegularFile file(fd, {});
  if (fstat(fd, &file.stat_) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(file.stat_.st_mode)) return NotRegular(path, file.stat_.st_mode);
  if (file.stat_.st_dev != before.st_dev || file.stat_.st_ino != before.st_ino) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": replaced while being opened"));
  }
  if (rules.own_user_only && file.stat_.st_uid != geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": owned by uid ", file.stat_.st_uid, ", not by this user"));
  }
  if (rules.trusted_only && !WritableOnlyByUs(file.stat_)) {
    return absl::PermissionDeniedError(
        absl::StrFormat("%s: owned by uid %d, mode %04o: someone else could have written it", path,
                        file.stat_.st_uid, file.stat_.st_mode & 07777));
  }
  if (file.size() > rules.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", file.size(), " bytes, more than the bound of ", rules.max_bytes));
  }
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), stat_(other.stat_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    stat_ = other.stat_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::Release() { return std::exchange(fd_, -1); }

}  // namespace hangwatch::symbols
