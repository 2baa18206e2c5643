// TaskFile: a /proc/self/task/TID file kept open between reads (see task_file.h).
#include "unwind/internal/task_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "unwind/proc_files.h"

namespace hangwatch::unwind::internal {

bool TaskFile::StillOurs() const {
  struct stat st;
  return fd_ >= 0 && fstat(fd_, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

void TaskFile::Close() {
  if (StillOurs()) close(fd_);
  fd_ = -1;
}

ptrdiff_t TaskFile::Read(pid_t tid, char* buf, size_t size) {
  if (buf == nullptr || size == 0) return -1;
  buf[0] = '\0';
  if (fd_ >= 0 && (tid_ != tid || !StillOurs())) Close();
  // Twice at most: a cached descriptor may belong to a thread that has gone (its tid reused).
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_ < 0) {
      char path[64];
      TaskPath(0, tid, leaf_, path, sizeof(path));
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      struct stat st;
      if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
      }
      fd_ = fd;
      tid_ = tid;
      dev_ = st.st_dev;
      ino_ = st.st_ino;
    }
    // These files are generated whole by one read: one pread, no second call just to see
    // end-of-file (a text longer than the buffer is cut, as documented).
    ssize_t n;
    do {
      n = pread(fd_, buf, size - 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      buf[n] = '\0';
      return n;
    }
    Close();
  }
  return -1;
}

char ReadSchedState(pid_t tid, SchedStateFiles* files) {
  char buf[512];
  const ptrdiff_t n = files->syscall.Read(tid, buf, sizeof(buf));
  if (n > 0 && SaysRunning(buf, static_cast<size_t>(n))) return 'R';
  const ptrdiff_t m = files->stat.Read(tid, buf, sizeof(buf));
  return m > 0 ? ParseStatState(buf, static_cast<size_t>(m)) : '?';
}

}  // namespace hangwatch::unwind::internal
