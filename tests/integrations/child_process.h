// Running another program for a test: extra environment, its stdout read line by line, its
// exit status. Header-only; used by the preload tests.
#ifndef HANGWATCH_TESTS_INTEGRATIONS_CHILD_PROCESS_H_
#define HANGWATCH_TESTS_INTEGRATIONS_CHILD_PROCESS_H_

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace hangwatch::testing {

// The current environment plus `env` ("NAME=value", overriding).
inline std::vector<std::string> EnvironmentWith(const std::vector<std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool overridden = false;
    for (const auto& o : env) overridden |= kv.substr(0, kv.find('=')) == o.substr(0, o.find('='));
    if (!overridden) envs.push_back(kv);
  }
  envs.insert(envs.end(), env.begin(), env.end());
  return envs;
}

// The strings as execve() wants them: pointers into `v` (which must outlive them), null-ended.
inline std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

class ChildProcess {
 public:
  // Starts argv with the current environment plus `env` ("NAME=value", overriding).
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    int out[2];
    if (pipe(out) != 0) return;
    const std::vector<std::string> envs = EnvironmentWith(env);
    std::vector<char*> a = CStrings(argv), e = CStrings(envs);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      execve(a[0], a.data(), e.data());
      _exit(127);
    }
    close(out[1]);
    out_ = out[0];
  }
  ~ChildProcess() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (out_ >= 0) close(out_);
  }

  pid_t pid() const { return pid_; }

  // The next line of stdout, waiting at most `timeout`; false at EOF or timeout.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (size_t nl = buf_.find('\n'); nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      struct pollfd p = {out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char b[512];
      const ssize_t n = read(out_, b, sizeof b);
      if (n <= 0) return false;
      buf_.append(b, static_cast<size_t>(n));
    }
  }

  // Waits at most `bound` for the exit: the exit code, 128 + signal, or -1 when the child
  // was still running (it is then killed). A bound for a child that must end by itself.
  int WaitAtMost(std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (true) {
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno != EINTR) return -2;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        Wait();
        return -1;
      }
      struct timespec step {
        0, 1'000'000
      };
      nanosleep(&step, nullptr);
    }
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Waits for the exit; the exit code, or 128 + signal.
  int Wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool waited_ = false;
  std::string buf_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh, empty temporary directory, removed (with its files) by the destructor.
class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/hangwatch-test.XXXXXX";
    path_ = mkdtemp(t) ? t : "/tmp";
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (path_ != "/tmp") (void)!std::system(cmd.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_INTEGRATIONS_CHILD_PROCESS_H_
