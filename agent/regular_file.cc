#include "agent/regular_file.h"

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

// "cannot open PATH: it is a symbolic link" / "...: not a regular file (a FIFO)".
std::string Refusal(const std::string& path, mode_t mode) {
  if (S_ISLNK(mode)) return "cannot open " + path + ": it is a symbolic link (not followed)";
  return "cannot open " + path + ": not a regular file (" + KindOf(mode) + ")";
}

}  // namespace

int OpenRegularFile(const std::string& path, int flags, mode_t mode, std::string* error) {
  // Looked at first, so that a FIFO or a device is not even opened (opening a device may do
  // something); checked again on the descriptor, since the name may change in between.
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    *error = Refusal(path, st.st_mode);
    return -1;
  }
  const int fd = open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    *error = err == ELOOP && lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)
                 ? Refusal(path, st.st_mode)
                 : "cannot open " + path + ": " + std::strerror(err);
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = Refusal(path, st.st_mode);
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace hangwatch::agent
