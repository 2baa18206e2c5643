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
// The text is parsed with unwind/proc_files.h, the one place that knows these formats.
//
// Not async-signal-safe (open/pread/fstat are, but nothing here is meant for a handler); one
// thread at a time per object. Linux only. Internal to unwind/: code outside it reads these
// files through unwind/proc_files.h (ReadSchedState and the parsers).
#ifndef HANGWATCH_UNWIND_INTERNAL_TASK_FILE_H_
#define HANGWATCH_UNWIND_INTERNAL_TASK_FILE_H_

#include <sys/types.h>

#include <cstddef>

namespace hangwatch::unwind::internal {

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

#endif  // HANGWATCH_UNWIND_INTERNAL_TASK_FILE_H_
