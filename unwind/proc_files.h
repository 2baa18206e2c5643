// The /proc files hangwatch reads, read and parsed in one place: a task's stat, syscall and
// schedstat lines, fields of a status file, the lines of a maps file, and the path of this
// process's executable.
//
// libc only, and allocation-free throughout: every reader fills a buffer the caller provides,
// with open/openat, read, readlink and close (no stdio, no std::string), and every parser works
// on that text in place and returns pointers into it. So the same code serves the sampling
// thread next to the capture path, the ptrace snapshot of another process, the symbolizer and
// the preload shim around fork and exec. None of it takes a lock or keeps state; a parser never
// reads past the length it is given. Linux only.
//
// Paths: `pid` 0 means this process ("/proc/self/..."). Files of one thread of this process
// that are read again and again (the sampler's) are kept open by unwind/internal/task_file.h,
// which parses them with the functions here.
#ifndef HANGWATCH_UNWIND_PROC_FILES_H_
#define HANGWATCH_UNWIND_PROC_FILES_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace hangwatch::unwind {

// ---- paths and whole small files ----

// Writes "/proc/PID/LEAF" ("/proc/self/LEAF" for pid 0) into out, always NUL-terminated and cut
// to size. Returns the length written.
size_t ProcPath(pid_t pid, const char* leaf, char* out, size_t size);

// Writes "/proc/PID/task/TID/LEAF" ("/proc/self/task/TID/LEAF" for pid 0), as ProcPath.
size_t TaskPath(pid_t pid, pid_t tid, const char* leaf, char* out, size_t size);

// Reads a small file (a /proc text generated whole) into buf, NUL-terminated, at most size - 1
// bytes. Returns the length, or -1 with errno set when it cannot be opened or read. A relative
// `path` is looked up from the directory `dir_fd` (ReadProcFileAt): for many files under one
// /proc/PID/task, that skips the walk through /proc/PID for each.
ssize_t ReadProcFile(const char* path, char* buf, size_t size);
ssize_t ReadProcFileAt(int dir_fd, const char* path, char* buf, size_t size);

// ---- /proc/.../task/TID/stat ----

// "tid (comm) state ppid ... utime(14) stime(15) ... starttime(22) ...". The comm may contain
// spaces and parentheses, so the fields start after the LAST ')'.
struct TaskStat {
  char state = '?';            // R, S, D, T, t, Z, X, I...
  const char* comm = nullptr;  // inside the parsed text, not NUL-terminated
  size_t comm_size = 0;
  bool has_ppid = false;  // the state is one letter and a parent pid follows it
  int64_t ppid = 0;
  bool has_cpu_ticks = false;  // utime and stime were present (a cut text may end before)
  uint64_t utime_ticks = 0;    // clock ticks (sysconf(_SC_CLK_TCK))
  uint64_t stime_ticks = 0;
  bool has_start_time = false;    // starttime was present
  uint64_t start_time_ticks = 0;  // clock ticks after boot
};

// Parses the first `len` bytes of a stat line. False (and *out unchanged) when the comm and the
// state cannot be found.
bool ParseTaskStat(const char* text, size_t len, TaskStat* out);

// Just the state letter of a stat line; '?' when malformed.
char ParseStatState(const char* text, size_t len);

// When process `pid` (0: this one) started, ms since the Unix epoch: its stat's starttime
// (clock ticks after boot, on the boot-time clock) plus the boot's moment (CLOCK_REALTIME less
// CLOCK_BOOTTIME, now). 0 when unknown.
int64_t ProcessStartUnixMs(pid_t pid);

// ---- /proc/.../task/TID/syscall ----

// True when a syscall line says "running": the thread is in TASK_RUNNING (state R), or woke up
// while the kernel looked at it. A sleeping thread's line is its system call.
inline bool SaysRunning(const char* syscall_line, size_t len) {
  return len >= 7 && std::memcmp(syscall_line, "running", 7) == 0;
}

// A sleeping thread's syscall line: "nr 0xa1 ... 0xa6 0xsp 0xpc" inside a system call,
// "-1 0xsp 0xpc" when blocked outside one.
struct TaskSyscall {
  int64_t nr = -1;
  uint64_t args[6] = {};  // zero when the line has only sp and pc
  uintptr_t sp = 0;
  uintptr_t pc = 0;
  int fields = 0;  // 9 (in a system call) or 3
};

// Parses the first `len` bytes of a syscall line. False for "running" and for a line of
// neither shape.
bool ParseTaskSyscall(const char* text, size_t len, TaskSyscall* out);

// Whether the syscall lines /proc shows for this process's threads are in this program's own
// terms: its system call numbers, its registers. Under an emulator (qemu-user) they are the
// host's (another architecture's call numbers, the emulator's stack pointer), and a reader that
// decoded them would name calls the program never made. Found once, from the calling thread's
// own line (the kernel shows a thread reading its own syscall file inside that read(2)), and
// remembered; true when the line cannot be read (nothing else in /proc can be then either).
bool ProcSyscallLinesAreOurs();

// ---- /proc/.../schedstat ----

// "<ns on the CPU> <ns waiting on a run queue> <timeslices>" (CONFIG_SCHED_INFO).
struct SchedStat {
  uint64_t cpu_ns = 0;
  uint64_t run_delay_ns = 0;
  uint64_t timeslices = 0;
};

// Parses the first `len` bytes. Returns how many of the three fields, from the first, were
// read (0 when the text is not a schedstat line).
int ParseSchedStat(const char* text, size_t len, SchedStat* out);

// ---- /proc/.../status ----

// The value of field `name` ("TracerPid", "SigBlk"...) of a NUL-terminated status text: a
// pointer just past "name:" and the blanks after it, or nullptr when the field is absent. The
// first line (Name) is never matched, so a thread's name cannot pose as a field.
const char* FindStatusField(const char* status, const char* name);

// A decimal field; false when absent or not a number.
bool StatusDecimal(const char* status, const char* name, int64_t* out);

// A hexadecimal mask field (SigBlk, SigIgn...; at most 16 digits); false when absent or empty.
bool StatusMask(const char* status, const char* name, uint64_t* out);

// The pid of the process tracing process `pid` (0: this one), from its status file; 0 when it
// is not traced or the file cannot be read.
pid_t ReadTracerPid(pid_t pid);

// ---- scheduler state of a thread of this process ----

// Scheduler state letter of thread `tid` of this process, or '?' when unreadable: "running"
// from .../syscall when the thread is in state R (cheap, and without touching the target),
// else the letter from .../stat. Opens and closes the files on each call; the samplers keep
// theirs open (unwind/internal/task_file.h).
char ReadSchedState(pid_t tid);

// ---- /proc/PID/maps ----

// One line: "lo-hi perms offset major:minor inode [path]".
struct MapsLine {
  uint64_t lo = 0;
  uint64_t hi = 0;
  const char* perms = nullptr;  // "r-xp", inside the parsed text
  size_t perms_size = 0;
  uint64_t offset = 0;
  uint64_t inode = 0;
  const char* path = nullptr;  // inside the parsed text: "" for anonymous mappings, "[stack]",
  size_t path_size = 0;        // "[vdso]"..., and " (deleted)" kept

  bool readable() const { return perms_size > 0 && perms[0] == 'r'; }
  bool executable() const { return perms_size > 2 && perms[2] == 'x'; }
};

// Parses one line (without its newline). False when malformed or empty (hi <= lo).
bool ParseMapsLine(const char* line, size_t len, MapsLine* out);

// Called for each well-formed line, in order.
using MapsVisitor = void (*)(const MapsLine& line, void* arg);

// Calls visit for each well-formed line of a maps text; malformed lines are skipped.
void ForEachMapsLine(const char* text, size_t len, MapsVisitor visit, void* arg);

// Reads /proc/PID/maps (pid 0: this process) through `buf`, one buffer's worth at a time, and
// calls visit for each well-formed line. A line longer than `size` bytes is skipped (PATH_MAX
// plus the fields fit in 4352). Returns false with errno set when the file cannot be
// opened or a read fails; the lines read before a failure have been visited.
bool ReadMaps(pid_t pid, char* buf, size_t size, MapsVisitor visit, void* arg);

// The same with any callable `void(const MapsLine&)`.
template <typename F>
void ForEachMapsLine(const char* text, size_t len, F&& visit) {
  using Fn = std::remove_reference_t<F>;
  ForEachMapsLine(
      text, len, [](const MapsLine& line, void* f) { (*static_cast<Fn*>(f))(line); },
      const_cast<void*>(static_cast<const void*>(&visit)));
}
template <typename F>
bool ReadMaps(pid_t pid, char* buf, size_t size, F&& visit) {
  using Fn = std::remove_reference_t<F>;
  return ReadMaps(
      pid, buf, size, [](const MapsLine& line, void* f) { (*static_cast<Fn*>(f))(line); },
      const_cast<void*>(static_cast<const void*>(&visit)));
}

// ---- the executable ----

// The path of this process's executable (readlink of /proc/self/exe) into buf, NUL-terminated,
// cut to size - 1 bytes. Returns the length, or -1 with errno set (buf then "").
ssize_t ReadExePath(char* buf, size_t size);

}  // namespace hangwatch::unwind

#endif  // HANGWATCH_UNWIND_PROC_FILES_H_
