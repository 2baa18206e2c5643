// The /proc readers and parsers of proc_files.h. Nothing here allocates, locks or uses stdio:
// number parsing is written out (strtoull may consult the locale), paths are built by hand
// (snprintf may allocate).
#include "unwind/proc_files.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "unwind/internal/task_file.h"

namespace hangwatch::unwind {
namespace {

// Appends to a fixed buffer, cutting at size - 1 and always leaving it NUL-terminated.
class PathWriter {
 public:
  PathWriter(char* out, size_t size) : out_(out), size_(size) {
    if (size_ > 0) out_[0] = '\0';
  }
  void Put(char c) {
    if (pos_ + 1 < size_) {
      out_[pos_++] = c;
      out_[pos_] = '\0';
    }
  }
  void Put(const char* s) {
    for (; *s != '\0'; ++s) Put(*s);
  }
  void PutNumber(unsigned long value) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0 && n < sizeof(digits));
    while (n > 0) Put(digits[--n]);
  }
  // "/proc/PID/" or "/proc/self/".
  void PutProcDir(pid_t pid) {
    Put("/proc/");
    if (pid > 0) {
      PutNumber(static_cast<unsigned long>(pid));
    } else {
      Put("self");
    }
    Put('/');
  }
  size_t size() const { return pos_; }

 private:
  char* out_;
  size_t size_;
  size_t pos_ = 0;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Digits of `base` (10 or 16) at *p, before `end`: at least one, and no more than 64 bits
// hold. Advances past them.
bool ParseUnsigned(const char** p, const char* end, unsigned base, uint64_t* out) {
  uint64_t v = 0;
  const char* q = *p;
  for (; q < end; ++q) {
    const int d = HexDigit(*q);
    if (d < 0 || static_cast<unsigned>(d) >= base) break;
    if (v > (~uint64_t{0} - static_cast<uint64_t>(d)) / base) return false;  // overflow
    v = v * base + static_cast<uint64_t>(d);
  }
  if (q == *p) return false;
  *p = q;
  *out = v;
  return true;
}

bool ParseHex(const char** p, const char* end, uint64_t* out) {
  return ParseUnsigned(p, end, 16, out);
}

bool ParseDecimal(const char** p, const char* end, uint64_t* out) {
  return ParseUnsigned(p, end, 10, out);
}

// As ParseHex, after an optional "0x" (the syscall file prints its numbers so).
bool ParsePrefixedHex(const char** p, const char* end, uint64_t* out) {
  const char* q = *p;
  if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) q += 2;
  if (!ParseHex(&q, end, out)) return false;
  *p = q;
  return true;
}

// A decimal number with an optional sign.
bool ParseSigned(const char** p, const char* end, int64_t* out) {
  const char* q = *p;
  bool negative = false;
  if (q < end && (*q == '-' || *q == '+')) {
    negative = *q == '-';
    ++q;
  }
  uint64_t v = 0;
  if (!ParseDecimal(&q, end, &v)) return false;
  *p = q;
  *out = static_cast<int64_t>(negative ? 0 - v : v);  // two's complement, no overflow
  return true;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

void SkipBlanks(const char** p, const char* end) {
  while (*p < end && IsBlank(**p)) ++*p;
}

void SkipSpace(const char** p, const char* end) {
  while (*p < end && (IsBlank(**p) || **p == '\n')) ++*p;
}

bool Expect(const char** p, const char* end, char c) {
  if (*p >= end || **p != c) return false;
  ++*p;
  return true;
}

// Moves *p on, counting the single spaces between stat fields from *field, to the start of field
// `to`. False when the text ends first.
bool SkipToField(const char** p, const char* end, int* field, int to) {
  while (*p < end && *field < to) {
    if (**p == ' ') ++*field;
    ++*p;
  }
  return *field == to;
}

void VisitIfWellFormed(const char* line, size_t len, MapsVisitor visit, void* arg) {
  MapsLine parsed;
  if (ParseMapsLine(line, len, &parsed)) visit(parsed, arg);
}

}  // namespace

size_t ProcPath(pid_t pid, const char* leaf, char* out, size_t size) {
  PathWriter w(out, size);
  w.PutProcDir(pid);
  w.Put(leaf);
  return w.size();
}

size_t TaskPath(pid_t pid, pid_t tid, const char* leaf, char* out, size_t size) {
  PathWriter w(out, size);
  w.PutProcDir(pid);
  w.Put("task/");
  w.PutNumber(static_cast<unsigned long>(tid));
  w.Put('/');
  w.Put(leaf);
  return w.size();
}

ssize_t ReadProcFile(const char* path, char* buf, size_t size) {
  return ReadProcFileAt(AT_FDCWD, path, buf, size);
}

ssize_t ReadProcFileAt(int dir_fd, const char* path, char* buf, size_t size) {
  if (buf == nullptr || size == 0) {
    errno = EINVAL;
    return -1;
  }
  buf[0] = '\0';
  const int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  while (used + 1 < size) {
    const ssize_t n = read(fd, buf + used, size - 1 - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd);
      buf[0] = '\0';
      errno = saved;
      return -1;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  buf[used] = '\0';
  return static_cast<ssize_t>(used);
}

bool ParseTaskStat(const char* text, size_t len, TaskStat* out) {
  const char* end = text + len;
  const auto* open_paren = static_cast<const char*>(std::memchr(text, '(', len));
  const char* close_paren = nullptr;
  for (const char* p = text; p < end; ++p) {
    if (*p == ')') close_paren = p;
  }
  if (open_paren == nullptr || close_paren == nullptr || close_paren < open_paren ||
      close_paren + 2 >= end || close_paren[1] != ' ') {
    return false;
  }
  TaskStat stat;
  stat.comm = open_paren + 1;
  stat.comm_size = static_cast<size_t>(close_paren - open_paren - 1);
  const char* p = close_paren + 2;
  stat.state = *p;
  const char* ppid = p + 1;
  if (ppid < end && *ppid == ' ' && ++ppid < end && ParseSigned(&ppid, end, &stat.ppid)) {
    stat.has_ppid = true;
  }
  // Field 3 is the state; skip to field 14.
  int field = 3;
  uint64_t utime = 0;
  if (SkipToField(&p, end, &field, 14) && ParseDecimal(&p, end, &utime) && p < end && *p == ' ') {
    ++p;
    uint64_t stime = 0;
    ParseDecimal(&p, end, &stime);  // a text cut right here reads as 0, as strtoull would
    stat.has_cpu_ticks = true;
    stat.utime_ticks = utime;
    stat.stime_ticks = stime;
    field = 15;
    uint64_t start_time = 0;
    if (SkipToField(&p, end, &field, 22) && ParseDecimal(&p, end, &start_time)) {
      stat.has_start_time = true;
      stat.start_time_ticks = start_time;
    }
  }
  *out = stat;
  return true;
}

bool ProcSyscallLinesAreOurs() {
  // 0: not yet known, 1: ours, 2: the host's. Threads that race here compute the same answer.
  static std::atomic<int> known{0};
  const int k = known.load(std::memory_order_relaxed);
  if (k != 0) return k == 1;
  char buf[256];
  ssize_t n = ReadProcFile("/proc/thread-self/syscall", buf, sizeof(buf));
  if (n <= 0) {  // before Linux 3.17
    char path[64];
    TaskPath(0, static_cast<pid_t>(syscall(SYS_gettid)), "syscall", path, sizeof(path));
    n = ReadProcFile(path, buf, sizeof(buf));
  }
  TaskSyscall sys;
  // The line was taken inside ReadProcFile's read(2).
  const bool ours = n <= 0 || !ParseTaskSyscall(buf, static_cast<size_t>(n), &sys) ||
                    sys.fields != 9 || sys.nr == SYS_read;
  known.store(ours ? 1 : 2, std::memory_order_relaxed);
  return ours;
}

int64_t ProcessStartUnixMs(pid_t pid) {
  char path[64];
  char text[1024];
  ProcPath(pid, "stat", path, sizeof path);
  const ssize_t len = ReadProcFile(path, text, sizeof text);
  TaskStat stat;
  if (len <= 0 || !ParseTaskStat(text, static_cast<size_t>(len), &stat) || !stat.has_start_time) {
    return 0;
  }
  timespec real{};
  timespec boot{};
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0 || clock_gettime(CLOCK_REALTIME, &real) != 0 ||
      clock_gettime(CLOCK_BOOTTIME, &boot) != 0) {
    return 0;
  }
  const int64_t booted_ms = (static_cast<int64_t>(real.tv_sec) - boot.tv_sec) * 1000 +
                            (real.tv_nsec - boot.tv_nsec) / 1000000;
  return booted_ms + static_cast<int64_t>(stat.start_time_ticks * 1000 / static_cast<uint64_t>(hz));
}

char ParseStatState(const char* text, size_t len) {
  TaskStat stat;
  return ParseTaskStat(text, len, &stat) ? stat.state : '?';
}

bool ParseTaskSyscall(const char* text, size_t len, TaskSyscall* out) {
  if (SaysRunning(text, len)) return false;
  const char* end = text + len;
  // Up to nine fields separated by blanks; the last two are sp and pc, whatever came before.
  const char* fields[9];
  const char* field_ends[9];
  int count = 0;
  const char* p = text;
  while (p < end && *p != '\0' && count < 9) {
    SkipSpace(&p, end);
    if (p == end || *p == '\0') break;
    fields[count] = p;
    while (p < end && *p != '\0' && *p != ' ' && *p != '\n') ++p;
    field_ends[count++] = p;
  }
  if (count != 3 && count != 9) return false;
  TaskSyscall parsed;
  parsed.fields = count;
  const char* q = fields[0];
  if (!ParseSigned(&q, field_ends[0], &parsed.nr)) return false;
  for (int i = 1; i + 2 < count; ++i) {
    q = fields[i];
    if (!ParsePrefixedHex(&q, field_ends[i], &parsed.args[i - 1])) return false;
  }
  uint64_t sp = 0;
  uint64_t pc = 0;
  q = fields[count - 2];
  if (!ParsePrefixedHex(&q, field_ends[count - 2], &sp)) return false;
  q = fields[count - 1];
  if (!ParsePrefixedHex(&q, field_ends[count - 1], &pc)) return false;
  parsed.sp = static_cast<uintptr_t>(sp);
  parsed.pc = static_cast<uintptr_t>(pc);
  *out = parsed;
  return true;
}

int ParseSchedStat(const char* text, size_t len, SchedStat* out) {
  const char* end = text + len;
  const char* p = text;
  uint64_t* fields[] = {&out->cpu_ns, &out->run_delay_ns, &out->timeslices};
  int count = 0;
  for (uint64_t* field : fields) {
    SkipSpace(&p, end);
    if (!ParseDecimal(&p, end, field)) break;
    ++count;
  }
  return count;
}

const char* FindStatusField(const char* status, const char* name) {
  const size_t name_len = std::strlen(name);
  for (const char* p = std::strchr(status, '\n'); p != nullptr; p = std::strchr(p + 1, '\n')) {
    if (std::strncmp(p + 1, name, name_len) == 0 && p[1 + name_len] == ':') {
      const char* value = p + 2 + name_len;
      while (IsBlank(*value)) ++value;
      return value;
    }
  }
  return nullptr;
}

bool StatusDecimal(const char* status, const char* name, int64_t* out) {
  const char* value = FindStatusField(status, name);
  if (value == nullptr) return false;
  return ParseSigned(&value, value + std::strlen(value), out);
}

bool StatusMask(const char* status, const char* name, uint64_t* out) {
  const char* p = FindStatusField(status, name);
  if (p == nullptr) return false;
  uint64_t mask = 0;
  int digits = 0;
  for (; digits < 16; ++p, ++digits) {
    const int v = HexDigit(*p);
    if (v < 0) break;
    mask = (mask << 4) | static_cast<uint64_t>(v);
  }
  if (digits == 0) return false;
  *out = mask;
  return true;
}

pid_t ReadTracerPid(pid_t pid) {
  char path[64];
  ProcPath(pid, "status", path, sizeof(path));
  char buf[4096];
  if (ReadProcFile(path, buf, sizeof(buf)) <= 0) return 0;
  int64_t tracer = 0;
  if (!StatusDecimal(buf, "TracerPid", &tracer)) return 0;
  return static_cast<pid_t>(tracer);
}

char ReadSchedState(pid_t tid) {
  internal::SchedStateFiles files;
  return internal::ReadSchedState(tid, &files);
}

bool ParseMapsLine(const char* line, size_t len, MapsLine* out) {
  const char* end = line + len;
  const char* p = line;
  MapsLine e;
  uint64_t dev = 0;
  if (!ParseHex(&p, end, &e.lo) || !Expect(&p, end, '-') || !ParseHex(&p, end, &e.hi) ||
      !Expect(&p, end, ' ')) {
    return false;
  }
  const char* perms = p;
  while (p < end && *p != ' ') ++p;
  if (p == perms || p - perms > 7) return false;
  e.perms = perms;
  e.perms_size = static_cast<size_t>(p - perms);
  SkipBlanks(&p, end);
  if (!ParseHex(&p, end, &e.offset)) return false;
  SkipBlanks(&p, end);
  if (!ParseHex(&p, end, &dev) || !Expect(&p, end, ':') || !ParseHex(&p, end, &dev)) {
    return false;
  }
  SkipBlanks(&p, end);
  if (!ParseDecimal(&p, end, &e.inode)) return false;
  if (p < end && !IsBlank(*p)) return false;
  SkipBlanks(&p, end);
  e.path = p;
  e.path_size = static_cast<size_t>(end - p);
  if (e.hi <= e.lo) return false;
  *out = e;
  return true;
}

void ForEachMapsLine(const char* text, size_t len, MapsVisitor visit, void* arg) {
  const char* end = text + len;
  for (const char* p = text; p < end;) {
    const auto* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (eol == nullptr) eol = end;
    VisitIfWellFormed(p, static_cast<size_t>(eol - p), visit, arg);
    p = eol + 1;
  }
}

bool ReadMaps(pid_t pid, char* buf, size_t size, MapsVisitor visit, void* arg) {
  if (buf == nullptr || size == 0) {
    errno = EINVAL;
    return false;
  }
  char path[64];
  ProcPath(pid, "maps", path, sizeof(path));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t used = 0;        // bytes of buf holding the start of a line not yet visited
  bool skipping = false;  // inside a line longer than buf: drop it up to its newline
  for (;;) {
    const ssize_t n = read(fd, buf + used, size - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd);
      errno = saved;
      return false;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    size_t start = 0;
    while (const auto* eol =
               static_cast<const char*>(std::memchr(buf + start, '\n', used - start))) {
      const size_t line_end = static_cast<size_t>(eol - buf);
      if (!skipping) VisitIfWellFormed(buf + start, line_end - start, visit, arg);
      skipping = false;
      start = line_end + 1;
    }
    if (start == 0 && used == size) {  // no newline in a full buffer
      skipping = true;
      used = 0;
      continue;
    }
    std::memmove(buf, buf + start, used - start);
    used -= start;
  }
  close(fd);
  if (used > 0 && !skipping) VisitIfWellFormed(buf, used, visit, arg);
  return true;
}

ssize_t ReadExePath(char* buf, size_t size) {
  if (buf == nullptr || size == 0) {
    errno = EINVAL;
    return -1;
  }
  const ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0) {
    buf[0] = '\0';
    return -1;
  }
  buf[n] = '\0';
  return n;
}

}  // namespace hangwatch::unwind
