#include "unwind/task_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hangwatch::unwind::internal {

// Without snprintf: nothing that might allocate or lock, so that callers near the capture
// path (SignalChannel's diagnosis) may use it too.
void TaskPath(pid_t tid, const char* leaf, char* out, size_t size) {
  if (size == 0) return;
  char digits[16];
  size_t n = 0;
  auto value = static_cast<unsigned long>(tid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n < sizeof(digits));
  size_t pos = 0;
  auto put = [&](char c) {
    if (pos + 1 < size) out[pos++] = c;
  };
  for (const char* p = "/proc/self/task/"; *p != '\0'; ++p) put(*p);
  while (n > 0) put(digits[--n]);
  put('/');
  for (const char* p = leaf; *p != '\0'; ++p) put(*p);
  out[pos] = '\0';
}

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
      TaskPath(tid, leaf_, path, sizeof(path));
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

char ParseStatState(const char* buf, size_t len) {
  const char* close_paren = nullptr;
  for (size_t i = 0; i < len; ++i) {
    if (buf[i] == ')') close_paren = buf + i;
  }
  if (close_paren == nullptr || close_paren + 2 >= buf + len || close_paren[1] != ' ') return '?';
  return close_paren[2];
}

char ReadSchedState(pid_t tid, SchedStateFiles* files) {
  char buf[512];
  const ptrdiff_t n = files->syscall.Read(tid, buf, sizeof(buf));
  if (n > 0 && SaysRunning(buf, static_cast<size_t>(n))) return 'R';
  const ptrdiff_t m = files->stat.Read(tid, buf, sizeof(buf));
  return m > 0 ? ParseStatState(buf, static_cast<size_t>(m)) : '?';
}

}  // namespace hangwatch::unwind::internal
