#include "hang/files/kept_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hangwatch::agent {
namespace {

// The report, the launch log, the open-hang file of each process of a lineage that changed
// user (a forgotten entry is not reused), and room to spare.
constexpr int kMaxKept = 8;

struct Kept {
  char path[4096];
  int fd;  // -1 once forgotten
  dev_t dev;
  ino_t ino;
};

// Entries are filled, then published by raising g_count (release); afterwards only their fd
// changes, to -1 (forgotten), so a reader that loads g_count (acquire) sees whole entries
// without a lock.
Kept g_kept[kMaxKept];
int g_count = 0;

// Where DupKeptFile looks instead of g_kept (SetKeptFileSource); null: g_kept.
int (*g_source)(const char*) = nullptr;

const Kept* Find(const char* path) {
  const int n = __atomic_load_n(&g_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i) {
    if (__atomic_load_n(&g_kept[i].fd, __ATOMIC_ACQUIRE) >= 0 &&
        strcmp(g_kept[i].path, path) == 0) {
      return &g_kept[i];
    }
  }
  return nullptr;
}

bool SameFile(int fd, const Kept& k) {
  if (fd < 0) return false;
  struct stat st {};
  return fstat(fd, &st) == 0 && st.st_dev == k.dev && st.st_ino == k.ino;
}

}  // namespace

bool KeepFile(const char* path, int fd) {
  const size_t len = path != nullptr ? strlen(path) : 0;
  struct stat st {};
  const int n = __atomic_load_n(&g_count, __ATOMIC_ACQUIRE);
  if (len == 0 || len >= sizeof g_kept[0].path || n == kMaxKept || Find(path) != nullptr ||
      fstat(fd, &st) != 0) {
    return false;
  }
  Kept& k = g_kept[n];
  memcpy(k.path, path, len + 1);
  k.fd = fd;
  k.dev = st.st_dev;
  k.ino = st.st_ino;
  __atomic_store_n(&g_count, n + 1, __ATOMIC_RELEASE);
  return true;
}

int DupKeptFile(const char* path) {
  if (auto* source = __atomic_load_n(&g_source, __ATOMIC_ACQUIRE); source != nullptr) {
    return source(path);
  }
  const int saved_errno = errno;
  const Kept* k = Find(path);
  const int fd = k != nullptr ? __atomic_load_n(&k->fd, __ATOMIC_ACQUIRE) : -1;
  int copy = -1;
  if (fd >= 0 && SameFile(fd, *k)) {
    copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    // The number may have been closed and reused between the check and the copy (another
    // thread of the program): the copy is kept only if it is still the same file.
    if (copy >= 0 && !SameFile(copy, *k)) {
      close(copy);
      copy = -1;
    }
  }
  errno = saved_errno;
  return copy;
}

void SetKeptFileSource(int (*dup_kept_file)(const char* path)) {
  __atomic_store_n(&g_source, dup_kept_file, __ATOMIC_RELEASE);
}

void ForgetKeptFile(const char* path) {
  const int saved_errno = errno;
  const int n = __atomic_load_n(&g_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i) {
    Kept& k = g_kept[i];
    const int fd = __atomic_load_n(&k.fd, __ATOMIC_ACQUIRE);
    if (fd < 0 || strcmp(k.path, path) != 0) continue;
    __atomic_store_n(&k.fd, -1, __ATOMIC_RELEASE);
    if (SameFile(fd, k)) close(fd);  // otherwise the number is the program's now
  }
  errno = saved_errno;
}

}  // namespace hangwatch::agent
