// Small files of /proc/self/task/TID/ read cheaply and safely from the sampling thread.
//
// Sampling reads a few tiny /proc files of the target thread for every sample (its state, the
// system call it sleeps in, its scheduling counters). Opening a /proc file costs more than
// reading it, so a TaskFile keeps its descriptor open between reads of the same thread and
// re-reads it with pread at offset 0, which makes the kernel generate the text afresh. The
// identity of the open file (device + inode) is checked before each use: the application may
// have closed our descriptor (a close-everything loop before exec, say) and been handed the same
// number for a file of its own, which we must neither read as ours nor close.
//
// Not async-signal-safe (open/pread/fstat are, but nothing here is meant for a handler); one
// thread at a time per object. Linux only. Internal to unwind/.
#ifndef HANGWATCH_UNWIND_TASK_FILE_H_
#define HANGWATCH_UNWIND_TASK_FILE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstring>

namespace hangwatch::unwind::internal {

// Writes "/proc/self/task/<tid>/<leaf>" into out (always NUL-terminated, truncated to size).
void TaskPath(pid_t tid, const char* leaf, char* out, size_t size);

class TaskFile {
 public:
  // `leaf` names the file ("stat", "syscall", "schedstat"...); it must outlive the object.
  explicit TaskFile(const char* leaf) : leaf_(leaf) {}
  ~TaskFile() { Close(); }
  TaskFile(const TaskFile&) = delete;
  TaskFile& operator=(const TaskFile&) = delete;

  // Reads the file of thread `tid` into buf, NUL-terminated, cut to size - 1 bytes (these files
  // are a line or two; size them generously). Returns the length, or -1 (buf then "")
  // when it cannot be opened or read (the thread is gone, /proc is not mounted...). Reopens
  // when `tid` differs from the last call's or the descriptor is no longer ours.
  ptrdiff_t Read(pid_t tid, char* buf, size_t size);

  // Closes the descriptor if it is still ours.
  void Close();

 private:
  bool StillOurs() const;

  const char* leaf_;
  int fd_ = -1;
  pid_t tid_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// The state letter of a stat line ("tid (comm) S ..."): it follows the last ')', since comm
// may itself contain spaces and parentheses. '?' when the line is malformed.
char ParseStatState(const char* buf, size_t len);

// True when a /proc/.../syscall line says "running": the thread is in TASK_RUNNING (state R),
// or woke up while the kernel looked at it. A sleeping thread's line is its system call.
inline bool SaysRunning(const char* syscall_line, size_t len) {
  return len >= 7 && std::memcmp(syscall_line, "running", 7) == 0;
}

// The files ReadSchedState keeps open for one target.
struct SchedStateFiles {
  TaskFile syscall{"syscall"};
  TaskFile stat{"stat"};
};

// Scheduler state letter (R, S, D, T, t, Z, X, I...) of thread `tid`, or '?' when unreadable.
//
// The cheap answer first: /proc/.../syscall reads "running" exactly when the thread is in
// TASK_RUNNING, i.e. state R, in well under a microsecond and without touching the target,
// whereas stat formats some fifty fields and takes locks the running target also needs (a few
// microseconds, visible as extra pause on the target). Only a thread that is not running has
// its stat read, for the exact letter.
char ReadSchedState(pid_t tid, SchedStateFiles* files);

}  // namespace hangwatch::unwind::internal

#endif  // HANGWATCH_UNWIND_TASK_FILE_H_
