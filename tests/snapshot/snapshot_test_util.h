// Helpers for the snapshot tests: the target process (tests/snapshot/snapshot_target.cc) driven
// through pipes, and running the `hangwatch` CLI with its output captured and a time bound.
#ifndef HANGWATCH_TESTS_SNAPSHOT_SNAPSHOT_TEST_UTIL_H_
#define HANGWATCH_TESTS_SNAPSHOT_SNAPSHOT_TEST_UTIL_H_

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace hangwatch::snapshot_test {

// Reads one line from fd (bounded by timeout_ms). Returns false on EOF or timeout.
inline bool ReadLine(int fd, std::string* line, int timeout_ms = 60000) {
  line->clear();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    char c;
    ssize_t n = read(fd, &c, 1);
    if (n <= 0) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
}

// The target program, with its stdin/stdout on pipes.
class Target {
 public:
  explicit Target(std::vector<std::string> args = {}) {
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> argv;
      std::string prog = SNAPSHOT_TARGET;
      argv.push_back(prog.data());
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(prog.c_str(), argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    std::string line;
    if (ReadLine(from_, &line) && line.rfind("ready", 0) == 0) {
      std::istringstream s(line.substr(5));
      int tid;
      while (s >> tid) tids_.push_back(tid);
    }
  }
  ~Target() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(to_);
    close(from_);
  }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  pid_t pid() const { return pid_; }
  bool ready() const { return tids_.size() == 8; }
  // One tid per chain, in snapshot_target.cc's order.
  const std::vector<int>& tids() const { return tids_; }

  // Sends a one-letter command and returns the answer line ("" on timeout / EOF).
  std::string Ask(char command, int timeout_ms = 60000) {
    char buf[2] = {command, '\n'};
    if (write(to_, buf, 2) != 2) return "";
    std::string line;
    ReadLine(from_, &line, timeout_ms);
    return line;
  }

  void KillAndReap() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  bool reaped_ = false;
  std::vector<int> tids_;
};

struct CliResult {
  int exit_code = -1;  // -1: killed by the time bound or a signal
  int signal = 0;      // the signal that killed it
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::string& path) {
  std::string s;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

// A running CLI process; Finish() waits for it with a time bound (SIGKILL after it).
class Cli {
 public:
  // `prefix` runs before the CLI (e.g. {"setpriv", "--reuid=65534", ...}).
  explicit Cli(const std::vector<std::string>& args, const std::vector<std::string>& prefix = {}) {
    char dir[] = "/tmp/hw_snapshot_test_XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    dir_ = dir;
    chmod(dir, 0777);
    pid_ = fork();
    if (pid_ == 0) {
      int o = open((dir_ + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
      int e = open((dir_ + "/err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<std::string> all = prefix;
      all.push_back(HANGWATCH_CLI);
      all.push_back("snapshot");
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Cli() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink((dir_ + "/out").c_str());
    unlink((dir_ + "/err").c_str());
    rmdir(dir_.c_str());
  }
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  pid_t pid() const { return pid_; }

  CliResult Finish(int timeout_ms = 60000) {
    CliResult r;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int status = 0;
    for (;;) {
      pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        status = -1;
        break;
      }
      timespec ts{0, 2000000};
      nanosleep(&ts, nullptr);  // polling a child's exit, bounded; not a synchronization
    }
    done_ = true;
    if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (status != -1 && WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = Slurp(dir_ + "/out");
    r.err = Slurp(dir_ + "/err");
    return r;
  }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  std::string dir_;
};

inline CliResult RunCli(const std::vector<std::string>& args,
                        const std::vector<std::string>& prefix = {}) {
  Cli cli(args, prefix);
  return cli.Finish();
}

// Scheduler state letters of every thread of pid.
inline std::string ThreadStates(pid_t pid) {
  std::string states;
  std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task.c_str());
  if (d == nullptr) return states;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string stat = Slurp(task + "/" + e->d_name + "/stat");
    size_t p = stat.rfind(')');
    if (p != std::string::npos && p + 2 < stat.size()) states.push_back(stat[p + 2]);
  }
  closedir(d);
  return states;
}

inline int TracerPid(pid_t pid) {
  std::string status = Slurp("/proc/" + std::to_string(pid) + "/status");
  size_t p = status.find("TracerPid:");
  return p == std::string::npos ? -1 : std::atoi(status.c_str() + p + 10);
}

inline size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace hangwatch::snapshot_test

#endif  // HANGWATCH_TESTS_SNAPSHOT_SNAPSHOT_TEST_UTIL_H_
