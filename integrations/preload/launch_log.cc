// The launch log's writers (launch_log.h): libc calls on stack buffers only, errno preserved.
// The file is opened for each event and closed again, so no descriptor outlives an event: a
// forked child, an executed program or a daemon that closes every descriptor it did not open
// never holds (or loses) one. The exception is a process about to change user (LaunchLogKeep):
// one descriptor is kept (agent/kept_files.h) and used when the name no longer opens.
#include "integrations/preload/launch_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/kept_files.h"
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

// Field 22 of /proc/self/stat (0 when unreadable).
unsigned long long StartTime() {
  char text[1024];
  const ssize_t len = unwind::ReadProcFile("/proc/self/stat", text, sizeof text);
  unwind::TaskStat stat;
  if (len <= 0 || !unwind::ParseTaskStat(text, static_cast<size_t>(len), &stat)) return 0;
  return stat.has_start_time ? stat.start_time_ticks : 0;
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
    const ssize_t n = unwind::ReadProcFile("/proc/self/comm", comm, sizeof comm);
    if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = '\0';
    name = n > 0 ? comm : "?";
  }
  line.AddField(name, 255);
  line.Add("\t");
  if (detail != nullptr) line.AddField(detail, 4095);
  line.Add("\n");
  int fd = open(g_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  // Out of reach since the process changed user: the descriptor kept before the change
  // (LaunchLogKeep), when it is still the log's.
  if (fd < 0 && (errno == EACCES || errno == EPERM)) fd = agent::DupKeptFile(g_path);
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

void LaunchLogKeep() {
  if (g_path[0] == '\0') return;
  const int saved_errno = errno;
  const int fd = open(g_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0 && !agent::KeepFile(g_path, fd)) close(fd);  // kept already (by the parent)
  errno = saved_errno;
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

void LaunchLogUnwritten(const char* type, int error_number) {
  Line detail;
  detail.AddField(type != nullptr ? type : "?", 64);
  detail.Add(" ");
  detail.AddNumber(static_cast<unsigned long long>(error_number < 0 ? 0 : error_number));
  detail.buf[detail.len] = '\0';
  Write("unwritten", detail.buf);
}

}  // namespace hangwatch::preload
