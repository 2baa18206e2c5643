// The launch log's writers (launch_log.h): libc calls on stack buffers only, errno preserved.
// The file is opened for each event and closed again, so no descriptor outlives an event: a
// forked child, an executed program or a daemon that closes every descriptor it did not open
// never holds (or loses) one. The exception is a process about to change user (LaunchLogKeep):
// one descriptor is kept (hang/files/kept_files.h) and used when the name no longer opens.
#include "integrations/preload/launch_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hang/files/kept_files.h"
#include "unwind/proc_files.h"

extern char* program_invocation_short_name;  // glibc: basename of argv[0]

namespace hangwatch::preload {
namespace {

// The path from HANGWATCH_LAUNCH_LOG, copied at Init (the environment may change later; an exec
// interposer may even be handed a new one). Empty: logging is off, also for a relative path,
// which would name another file after a chdir.
char g_path[4096];

// The process name as the shim was loaded: argv[0]'s basename, copied before the program could
// rewrite argv (nginx writes its titles over it), and /proc/self/comm then, to tell whether the
// program has renamed itself since. A forked child keeps its parent's; an exec loads anew.
char g_load_name[256];
char g_load_comm[32];

// /proc/self/comm without its newline into `out` ("" when unreadable).
void ReadComm(char* out, size_t size) {
  const ssize_t n = unwind::ReadProcFile("/proc/self/comm", out, size);
  size_t len = n > 0 ? static_cast<size_t>(n) : 0;
  if (len > 0 && out[len - 1] == '\n') --len;
  out[len < size ? len : size - 1] = '\0';
}

void NoteLoadName() {
  const char* name = program_invocation_short_name;
  size_t n = 0;
  for (; name != nullptr && name[n] != '\0' && n < sizeof g_load_name - 1; ++n) {
    g_load_name[n] = name[n];
  }
  g_load_name[n] = '\0';
  ReadComm(g_load_comm, sizeof g_load_comm);
}

// The NAME field (launch_log.h): the name at load, unless the kernel's name changed since.
const char* CurrentName(char* comm, size_t size) {
  ReadComm(comm, size);
  if (g_load_name[0] != '\0' && (comm[0] == '\0' || strcmp(comm, g_load_comm) == 0)) {
    return g_load_name;
  }
  return comm[0] != '\0' ? comm : "?";
}

// A line under construction in a fixed buffer: appends are truncated, never overflow.
struct Line {
  char buf[4096 + 2048];
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

// The line's head, "EVENT PID PPID STARTTIME NAME\t"; DETAIL comes next.
void Begin(Line* line, const char* event) {
  line->Add(event);
  line->Add(" ");
  line->AddNumber(static_cast<unsigned long long>(getpid()));
  line->Add(" ");
  line->AddNumber(static_cast<unsigned long long>(getppid()));
  line->Add(" ");
  line->AddNumber(StartTime());
  line->Add(" ");
  char comm[32];
  line->AddField(CurrentName(comm, sizeof comm), 255);
  line->Add("\t");
}

// Ends the line and appends it to the log.
void Send(Line* line) {
  line->Add("\n");
  int fd = open(g_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  // Out of reach since the process changed user: the descriptor kept before the change
  // (LaunchLogKeep), when it is still the log's.
  if (fd < 0 && (errno == EACCES || errno == EPERM)) fd = agent::DupKeptFile(g_path);
  if (fd >= 0) {
    // One write: O_APPEND makes it atomic with respect to other writers' lines.
    while (write(fd, line->buf, line->len) < 0 && errno == EINTR) {
    }
    close(fd);
  }
}

void Write(const char* event, const char* detail) {
  if (g_path[0] == '\0') return;
  const int saved_errno = errno;
  Line line;
  Begin(&line, event);
  if (detail != nullptr) line.AddField(detail, 4095);
  Send(&line);
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
  NoteLoadName();  // only with a log: nothing else reads it
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

void LaunchLogExec(const char* path, char* const argv[], ExecShim shim, bool spawn) {
  if (g_path[0] == '\0') return;
  const int saved_errno = errno;
  constexpr size_t kMaxArgv = 1024;
  Line line;
  Begin(&line, spawn ? "spawn" : "exec");
  line.Add(shim == ExecShim::kKept ? "kept" : shim == ExecShim::kStripped ? "stripped" : "absent");
  line.Add("\t");
  line.AddField(path != nullptr ? path : "", 4095);
  line.Add("\t");
  size_t used = 0;  // bytes of ARGV so far
  bool cut = false;
  for (size_t i = 0; argv != nullptr && argv[i] != nullptr; ++i) {
    if (i > 0) {
      if (used >= kMaxArgv) {
        cut = true;
        break;
      }
      line.Add(" ");
      ++used;
    }
    const size_t len = strlen(argv[i]);
    if (len > kMaxArgv - used) {
      line.AddField(argv[i], kMaxArgv - used);
      cut = true;
      break;
    }
    line.AddField(argv[i], len);
    used += len;
  }
  if (cut) line.Add("...");
  Send(&line);
  errno = saved_errno;
}

void LaunchLogExecFailed(int error_number) {
  char detail[16];
  size_t n = 0;
  char digits[16];
  unsigned v = error_number < 0 ? 0u : static_cast<unsigned>(error_number);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < sizeof digits);
  for (size_t i = 0; i < n; ++i) detail[i] = digits[n - 1 - i];
  detail[n] = '\0';
  Write("execfail", detail);
}

void LaunchLogArmed() { Write("armed", ""); }

void LaunchLogOff(const char* why) { Write("off", why != nullptr ? why : ""); }

void LaunchLogMainJoined(bool armed) { Write("join", armed ? "arm" : ""); }

void LaunchLogThreadWatched(const char* thread_name) {
  Write("watch", thread_name != nullptr && thread_name[0] != '\0' ? thread_name : "?");
}

void LaunchLogMainLoop() { Write("loop", ""); }

void LaunchLogThreadLeftOut(const char* thread_name) {
  Write("leftout", thread_name != nullptr && thread_name[0] != '\0' ? thread_name : "?");
}

void LaunchLogUnwritten(const char* type, int error_number) {
  Line detail;
  detail.AddField(type != nullptr ? type : "?", 64);
  detail.Add(" ");
  detail.AddNumber(static_cast<unsigned long long>(error_number < 0 ? 0 : error_number));
  detail.buf[detail.len] = '\0';
  Write("unwritten", detail.buf);
}

}  // namespace hangwatch::preload
