// A Python program run by a test: started with its stdout on a pipe, its "ready TID IDENT" line
// waited for (with a deadline), stopped and resumed around a read, killed at the end.
#ifndef HANGWATCH_TESTS_PYTHON_PYTHON_CHILD_H_
#define HANGWATCH_TESTS_PYTHON_PYTHON_CHILD_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hangwatch::python::testing {

inline uint64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

class PythonChild {
 public:
  PythonChild() = default;
  PythonChild(const PythonChild&) = delete;
  PythonChild& operator=(const PythonChild&) = delete;
  ~PythonChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }

  // Runs `argv` (argv[0] a path); false when it cannot be started.
  bool Start(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      dup2(fds[1], 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    return true;
  }

  // Waits up to `timeout_ms` for "ready TID IDENT"; false on timeout or exit.
  bool WaitReady(int timeout_ms = 20000) {
    const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(timeout_ms);
    while (buffer_.find('\n') == std::string::npos) {
      const uint64_t now = MonotonicMs();
      if (now >= deadline) return false;
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(deadline - now)) <= 0) continue;
      char buf[256];
      const ssize_t n = read(out_, buf, sizeof(buf));
      if (n <= 0) return false;
      buffer_.append(buf, static_cast<size_t>(n));
    }
    const std::string line = buffer_.substr(0, buffer_.find('\n'));
    buffer_.erase(0, line.size() + 1);
    unsigned long long ident = 0;
    if (std::sscanf(line.c_str(), "ready %d %llu", &ready_tid_, &ident) != 2) return false;
    ready_ident_ = ident;
    return true;
  }

  // Waits up to `timeout_ms` until thread `tid` is asleep in time.sleep's system call
  // (/proc/PID/task/TID/syscall's first field: clock_nanosleep from 3.11, select before).
  bool WaitAsleep(pid_t tid, int timeout_ms = 20000) const {
    const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(timeout_ms);
    const std::string path =
        "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/syscall";
    while (MonotonicMs() < deadline) {
      FILE* f = std::fopen(path.c_str(), "r");
      long got = -2;
      if (f != nullptr) {
        if (std::fscanf(f, "%ld", &got) != 1) got = -2;
        std::fclose(f);
      }
#if defined(SYS_select)
      if (got == SYS_select) return true;
#endif
      if (got == SYS_clock_nanosleep || got == SYS_pselect6) return true;
      usleep(1000);  // polling /proc: there is no event for "entered a system call"
    }
    return false;
  }

  // SIGSTOP and wait for the stop; SIGCONT.
  bool Stop() {
    if (kill(pid_, SIGSTOP) != 0) return false;
    int status = 0;
    return waitpid(pid_, &status, WUNTRACED) == pid_ && WIFSTOPPED(status);
  }
  void Continue() { kill(pid_, SIGCONT); }

  pid_t pid() const { return pid_; }
  pid_t ready_tid() const { return ready_tid_; }
  uint64_t ready_ident() const { return ready_ident_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  pid_t ready_tid_ = 0;
  uint64_t ready_ident_ = 0;
};

}  // namespace hangwatch::python::testing

#endif  // HANGWATCH_TESTS_PYTHON_PYTHON_CHILD_H_
