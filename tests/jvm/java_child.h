// A real JVM for the tests: tests/jvm/data/*.java compiled once per test binary with javac, and
// `java` started on one of them in a directory of its own (its working directory, where the
// attach trigger file goes), stdout and stderr in a file the test reads (a thread dump printed
// by a stray SIGQUIT would land there). Waits, bounded, for the program's "ready" line.
#ifndef HANGWATCH_TESTS_JVM_JAVA_CHILD_H_
#define HANGWATCH_TESTS_JVM_JAVA_CHILD_H_

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hangwatch::jvm_test {

inline void SleepMs(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool HaveJava() {
  return system("command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1") == 0;
}

// The classes' directory ("" when javac failed); compiled on the first call.
inline const std::string& JavaClasses() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/hangwatch-jvm-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return std::string();
    const std::string d = tmpl;
    const std::string cmd = "javac -d " + d + " " JAVA_SOURCES "/*.java 2>&1 && chmod -R a+rX " + d;
    return system(cmd.c_str()) == 0 ? d : std::string();
  }();
  return dir;
}

// The state letter of process `pid` ('?' when gone).
inline char ProcessState(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

class JavaChild {
 public:
  // `java VM_ARGS... -cp CLASSES MAIN`, with `env` ("NAME=value") added to the environment,
  // run by `prefix` when given (e.g. {"unshare", "-p", "-f", "--mount-proc"}: then java is the
  // prefix's child, java_pid()).
  JavaChild(const std::string& main, std::vector<std::string> vm_args = {},
            std::vector<std::string> env = {}, std::vector<std::string> prefix = {}) {
    char tmpl[] = "/tmp/hangwatch-jvm-cwd-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    cwd_ = tmpl;
    chmod(cwd_.c_str(), 0755);  // a JVM run as another user (a prefix) works there too
    out_ = cwd_ + "/out.txt";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      if (chdir(cwd_.c_str()) != 0) _exit(126);
      for (std::string& e : env) putenv(e.data());
      std::vector<std::string> args = prefix;
      args.push_back("java");
      for (std::string& a : vm_args) args.push_back(a);
      args.insert(args.end(), {"-cp", JavaClasses(), main});
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && Alive()) {
      if (Output().find("ready\n") != std::string::npos) {
        ready_ = true;
        break;
      }
      SleepMs(10);
    }
  }
  ~JavaChild() {
    if (pid_ > 0 && !exited_) {  // reaped: its pid may be another process's by now
      const pid_t java = java_pid();
      if (java != pid_) kill(java, SIGKILL);  // a namespace's init
      kill(pid_, SIGKILL);
      kill(pid_, SIGCONT);
      waitpid(pid_, nullptr, 0);
      // A JVM killed leaves its attach socket (one in a namespace of its own: the test's).
      if (java == pid_) unlink(("/tmp/.java_pid" + std::to_string(java)).c_str());
    }
    if (!cwd_.empty()) system(("rm -rf " + cwd_).c_str());
  }
  JavaChild(const JavaChild&) = delete;
  JavaChild& operator=(const JavaChild&) = delete;

  pid_t pid() const { return pid_; }
  // The java process: pid(), or the prefix's first child.
  pid_t java_pid() const {
    const std::string children =
        ReadFile("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
    const int child = std::atoi(children.c_str());
    return child > 0 ? child : pid_;
  }
  bool ready() const { return ready_; }
  const std::string& cwd() const { return cwd_; }
  std::string Output() const { return ReadFile(out_); }
  // Still running (not exited, not killed by a signal).
  bool Alive() {
    if (pid_ <= 0 || exited_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
      return false;
    }
    return true;
  }
  // Its wait status once Alive() saw it end (-1 before).
  int status() const { return status_; }
  // Waits (bounded) until the process is in state `state` ('T' after SIGSTOP).
  bool WaitForState(char state) {
    for (int i = 0; i < 1000; ++i) {
      if (ProcessState(pid_) == state) return true;
      SleepMs(5);
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
  bool exited_ = false;
  int status_ = -1;
  std::string cwd_;
  std::string out_;
};

}  // namespace hangwatch::jvm_test

#endif  // HANGWATCH_TESTS_JVM_JAVA_CHILD_H_
