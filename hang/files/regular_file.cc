#include "hang/files/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hangwatch::agent {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// Why a file that is there is not opened; errno is set to match (ELOOP for a link, EINVAL for
// the others), so that a caller telling "missing" (ENOENT) apart never takes it for missing.
std::string Refusal(mode_t mode) {
  if (S_ISLNK(mode)) {
    errno = ELOOP;
    return "it is a symbolic link (not followed)";
  }
  errno = EINVAL;
  return std::string("not a regular file (") + KindOf(mode) + ")";
}

}  // namespace

int OpenRegularFile(const std::string& path, int flags, mode_t mode, std::string* error) {
  // Looked at first, so that a FIFO or a device is not even opened (opening a device may do
  // something); checked again on the descriptor, since the name may change in between.
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    *error = Refusal(st.st_mode);
    return -1;
  }
  const int fd = open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP && lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      *error = Refusal(st.st_mode);
    } else {
      *error = std::strerror(err);
      errno = err;
    }
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *error = Refusal(st.st_mode);
    return -1;
  }
  return fd;
}

}  // namespace hangwatch::agent
