// The launch log's writers (launch_log.h): libc calls on stack buffers only, errno preserved.
// The file is opened for each event and closed again, so no descriptor outlives an event: a
// forked child, an executed program or a daemon that closes every descriptor it did not open
// never holds (or loses) one.
#include "integrations/preload/launch_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/proc_files.h"

extern char* program_invocation_short_name;  // glibc: basename of argv[0]

namespace hangwatch::preload {
namespace {

// The path from HANGWATCH_LAUNCH_LOG, copied at Init (the environment may change later; an exec
// interposer may even be handed a new one). Empty: logging is off, also for a relative path,
// which would name another file after a chdir.
char g_path[4096];

// A line under construction in a fixed buffer: appends are truncated, never overflow.
struct Line {
  char buf[4096 + 512];
  size_t len = 0;

  void Add(const char* s, size_t n) {
    for (size_t i = 0; i < n && len < sizeof buf - 1; ++i) buf[len++] = s[i];
  }
  void Add(const char* s) { Add(s, strlen(s)); }
  // Text without the field separators: a tab or a newline becomes a space.
  void AddField(const char* s, size_t max) {
    for (size_t i = 0; s[i] != '\0' && i < max && len < sizeof buf - 1; ++i) {
      buf[len++] = s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
    }
  }
  void AddNumber(unsigned long long v) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && len < sizeof buf - 1) buf[len++] = digits[--n];
  }
};

// Reads a small /proc/self file into `buf` (NUL-terminated). Returns its length (0: failed).
size_t ReadSmallFile(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  while (len < size - 1) {
    const ssize_t n = read(fd, buf + len, size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  close(fd);
  buf[len] = '\0';
  return len;
}

// Field 22 of /proc/self/stat. The name in field 2 may hold spaces and parentheses: the fields
// are counted from the last ')'.
unsigned long long StartTime() {
  char stat[1024];
  const size_t len = ReadSmallFile("/proc/self/stat", stat, sizeof stat);
  const char* p = nullptr;
  for (size_t i = 0; i < len; ++i) {
    if (stat[i] == ')') p = stat + i;
  }
  if (p == nullptr) return 0;
  // After ") " come fields 3, 4, ...: field 22 follows the 19th space after the ')'.
  int spaces = 0;
  for (++p; *p != '\0' && spaces < 20; ++p) {
    if (*p == ' ') ++spaces;
  }
  if (spaces != 20) return 0;
  unsigned long long v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<unsigned long long>(*p - '0');
  return v;
}

void Write(const char* event, const char* detail) {
  if (g_path[0] == '\0') return;
  const int saved_errno = errno;
  Line line;
  line.Add(event);
  line.Add(" ");
  line.AddNumber(static_cast<unsigned long long>(getpid()));
  line.Add(" ");
  line.AddNumber(static_cast<unsigned long long>(getppid()));
  line.Add(" ");
  line.AddNumber(StartTime());
  line.Add(" ");
  const char* name = program_invocation_short_name;
  char comm[64];
  if (name == nullptr || name[0] == '\0') {
    const size_t n = ReadSmallFile("/proc/self/comm", comm, sizeof comm);
    if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = '\0';
    name = n > 0 ? comm : "?";
  }
  line.AddField(name, 255);
  line.Add("\t");
  if (detail != nullptr) line.AddField(detail, 4095);
  line.Add("\n");
  const int fd = open(g_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    // One write: O_APPEND makes it atomic with respect to other writers' lines.
    while (write(fd, line.buf, line.len) < 0 && errno == EINTR) {
    }
    close(fd);
  }
  errno = saved_errno;
}

}  // namespace

void LaunchLogInit() {
  // secure_getenv: a set-user-ID program never writes where its caller's environment says.
  const char* path = secure_getenv("HANGWATCH_LAUNCH_LOG");
  const size_t n = path != nullptr ? strlen(path) : 0;
  if (n == 0 || n >= sizeof g_path || path[0] != '/') {
    g_path[0] = '\0';
    return;
  }
  memcpy(g_path, path, n + 1);
}

void LaunchLogLoaded() {
  if (g_path[0] == '\0') return;
  const int saved_errno = errno;
  char exe[4096];
  unwind::ReadExePath(exe, sizeof exe);  // "" when unreadable
  errno = saved_errno;
  Write("load", exe);
}

void LaunchLogExec(const char* path) { Write("exec", path != nullptr ? path : ""); }

void LaunchLogArmed() { Write("armed", ""); }

void LaunchLogOff(const char* why) { Write("off", why != nullptr ? why : ""); }

}  // namespace hangwatch::preload
