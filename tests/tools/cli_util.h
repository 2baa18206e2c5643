// Running `hangwatch` and other programs from the command-line tests.
#ifndef HANGWATCH_TESTS_TOOLS_CLI_UTIL_H_
#define HANGWATCH_TESTS_TOOLS_CLI_UTIL_H_

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hangwatch::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh temporary directory, removed with its files by the destructor.
class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/hangwatch-test.XXXXXX";
    path_ = mkdtemp(t) ? t : "";
  }
  ~TempDir() {
    if (!path_.empty()) (void)!std::system(("rm -rf '" + path_ + "'").c_str());
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out, err;
};

// Runs argv (argv[0] a path) with stdin from /dev/null; `env` entries ("NAME=value") are added.
inline CommandResult RunCommand(const std::vector<std::string>& argv,
                                const std::vector<std::string>& env = {}) {
  TempDir dir;
  const std::string out = dir / "out", err = dir / "err";
  CommandResult r;
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

// The number of lines of `s`.
inline size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

inline bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

#if defined(JUNIT_XSD)
// The file is valid against the JUnit schema CI tools read (tests/tools/junit.xsd).
inline void ExpectValidJunit(const std::string& path) {
  const auto v = RunCommand({"/usr/bin/xmllint", "--noout", "--schema", JUNIT_XSD, path});
  EXPECT_EQ(v.exit_code, 0) << v.err << ReadFile(path);
}
#endif

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_TOOLS_CLI_UTIL_H_
