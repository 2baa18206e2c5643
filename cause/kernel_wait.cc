// ReadKernelWait: stat's state letter, wchan, and the stack file's "[<0>] name+0x1/0x2" lines
// reduced to names.
#include "cause/kernel_wait.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "unwind/proc_files.h"

namespace hangwatch::cause {

bool ReadKernelWait(pid_t pid, pid_t tid, KernelWait* out) {
  *out = KernelWait{};
  char path[96];
  char text[4096];
  unwind::TaskPath(pid, tid, "stat", path, sizeof path);
  ssize_t n = unwind::ReadProcFile(path, text, sizeof text);
  if (n <= 0) return false;
  out->state = unwind::ParseStatState(text, static_cast<size_t>(n));
  out->d_state = out->state == 'D';
  unwind::TaskPath(pid, tid, "wchan", path, sizeof path);
  n = unwind::ReadProcFile(path, out->wchan, sizeof out->wchan);
  if (n <= 0 || std::strcmp(out->wchan, "0") == 0) out->wchan[0] = '\0';
  unwind::TaskPath(pid, tid, "stack", path, sizeof path);
  n = unwind::ReadProcFile(path, text, sizeof text);
  if (n < 0) return true;
  out->stack_readable = true;
  size_t at = 0;
  for (char* line = text; line != nullptr && *line != '\0';) {
    char* eol = std::strchr(line, '\n');
    if (eol != nullptr) *eol = '\0';
    // "[<0>] request_wait_answer+0x123/0x2c0 [fuse]"
    const char* name = std::strchr(line, ']');
    if (name != nullptr) {
      ++name;
      while (*name == ' ') ++name;
      size_t len = std::strcspn(name, "+ ");
      if (len > 0) {
        ++out->stack_frames;
        const char* sep = at == 0 ? "" : " <- ";
        const int w = std::snprintf(out->stack + at, sizeof out->stack - at, "%s%.*s", sep,
                                    static_cast<int>(len), name);
        if (w > 0) at = std::min(at + static_cast<size_t>(w), sizeof out->stack - 1);
      }
    }
    line = eol != nullptr ? eol + 1 : nullptr;
  }
  return true;
}

size_t FormatSummary(const KernelWait& w, char* buf, size_t n) {
  if (n == 0) return 0;
  int len = std::snprintf(buf, n, "state %c", w.state);
  if (w.wchan[0] != '\0' && len > 0 && static_cast<size_t>(len) < n) {
    len += std::snprintf(buf + len, n - len, " in %s", w.wchan);
  }
  if (w.stack_frames > 0 && len > 0 && static_cast<size_t>(len) < n) {
    len += std::snprintf(buf + len, n - len, " (kernel: %s)", w.stack);
  }
  if (len < 0) return 0;
  return static_cast<size_t>(len) < n ? static_cast<size_t>(len) : n - 1;
}

}  // namespace hangwatch::cause
