// Helpers for the agent's end-to-end tests (real watchdog, real SignalSampler, real clocks):
// waiting on events the agent produces (a callback firing, a counter moving), never on sleeps.
#ifndef HANGWATCH_TESTS_AGENT_E2E_UTIL_H_
#define HANGWATCH_TESTS_AGENT_E2E_UTIL_H_

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hangwatch/hangwatch.h"
#include "unwind/proc_files.h"

namespace hangwatch::testing {

// ThreadSanitizer turns every memory access of a busy loop into a call into its runtime, so the
// innermost frame of most samples is the runtime, not the looping function: tests about stack
// shapes skip under it (they run in the plain and ASan builds).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kTsan = true;
#else
inline constexpr bool kTsan = false;
#endif
#else
inline constexpr bool kTsan = false;
#endif
#define HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN()                \
  if (::hangwatch::testing::kTsan)                             \
  GTEST_SKIP() << "stack shapes are the TSan runtime's under " \
                  "TSan"

// Under an emulator (qemu-user) /proc shows the host's system calls, not the program's, and
// hangwatch names no system call wait there (unwind::ProcSyscallLinesAreOurs): the tests of what
// a wait was for skip (they run natively in the plain, ASan and TSan builds).
#define HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES()                                  \
  if (!::hangwatch::unwind::ProcSyscallLinesAreOurs())                              \
  GTEST_SKIP() << "/proc shows another architecture's system calls (an emulator): " \
                  "no wait can be named"

// Collects every hang reported through a callback.
class HangCollector {
 public:
  HangCollector() {
    id_ = AddHangCallback([this](const HangRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      hangs_.push_back(r);
      cv_.notify_all();
    });
  }
  ~HangCollector() { RemoveHangCallback(id_); }

  // Waits until at least n hangs have been reported (or `timeout`). Returns whether they were.
  bool WaitFor(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return hangs_.size() >= n; });
  }
  std::vector<HangRecord> hangs() {
    std::lock_guard<std::mutex> lock(mu_);
    return hangs_;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return hangs_.size();
  }

 private:
  int id_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HangRecord> hangs_;
};

// Polls `done` (cheap reads of agent state) until true or timeout: waiting for an event the
// agent exposes only as a counter.
inline bool WaitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

// A forked child's exit code (128 + signal when killed by one), or -1 when it has not exited
// within `limit` (it is then killed): a bound for a child that must end by itself, not a wait.
inline int WaitForChild(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (r < 0 && errno != EINTR) return -2;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The tids of this process's threads named `comm` (as /proc/self/task/TID/comm has it, without
// the newline).
inline std::vector<pid_t> ThreadsNamed(const std::string& comm) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[32] = {};
    std::snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    if (FILE* f = std::fopen(path, "r")) {
      if (std::fgets(name, sizeof name, f) != nullptr) {
        name[std::strcspn(name, "\n")] = '\0';
        if (comm == name) out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
      }
      std::fclose(f);
    }
  }
  closedir(d);
  return out;
}

inline uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// threshold 100 ms, sample and check every 10 ms, no logging. Frame-pointer frames only (no
// stack copy, so no CFI pass on the watchdog): these tests are about detection and timing,
// and keep the watchdog's per-sample cost small on a loaded machine (CFI has its own tests).
inline Config TestConfig() {
  Config c;
  c.threshold = std::chrono::milliseconds(100);
  c.sample_interval = std::chrono::milliseconds(10);
  c.check_interval = std::chrono::milliseconds(10);
  c.stack_copy_bytes = 0;
  c.log_hangs = false;
  return c;
}

// The first non-empty symbol of a stack's innermost frames, "" when none.
inline bool StackMentions(const Stack& s, const char* name, size_t top = 3) {
  for (size_t i = 0; i < s.frames.size() && i < top; ++i) {
    if (s.frames[i].symbol.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_AGENT_E2E_UTIL_H_
