// Test helpers: a thread's system call read from /proc while it is blocked, waited for with a
// deadline (never a sleep-and-hope).
#ifndef HANGWATCH_TESTS_CAUSE_BLOCKED_THREAD_H_
#define HANGWATCH_TESTS_CAUSE_BLOCKED_THREAD_H_

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "unwind/proc_files.h"

namespace hangwatch::testing {

inline pid_t CurrentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The system call thread `tid` of process `pid` (0: this one) sleeps in, once it sleeps in one
// of `nrs` (up to 10 s); false when it never did.
inline bool WaitForSyscall(pid_t pid, pid_t tid, std::initializer_list<long> nrs,
                           unwind::TaskSyscall* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char path[96], text[512];
  unwind::TaskPath(pid, tid, "syscall", path, sizeof path);
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = unwind::ReadProcFile(path, text, sizeof text);
    if (n > 0 && unwind::ParseTaskSyscall(text, static_cast<size_t>(n), out)) {
      for (long nr : nrs) {
        if (out->nr == nr) return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_CAUSE_BLOCKED_THREAD_H_
