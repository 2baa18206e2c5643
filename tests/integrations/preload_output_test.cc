// Where the preload shim writes, in programs that did not ask for it: never into whatever file a
// daemon has on descriptor 2 (its own data), never anything in a set-user-ID program (the
// invoking user would read the privileged process's stack and addresses); on a pipe, the hang
// but no lag line unless asked (HANGWATCH_LOG_LAG=1).
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"

namespace hangwatch::testing {
namespace {

struct Result {
  int exit_code = -1;
  std::string err;  // what the program wrote to its stderr, a pipe
};

// Runs argv with the current environment plus `env` (overriding), its stderr a pipe read to the
// end. `while_running(pid)` is called once the program has started.
template <typename Watch>
Result RunWithStderrPipe(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         Watch while_running) {
  const std::vector<std::string> envs = EnvironmentWith(env);
  std::vector<char*> a = CStrings(argv), e = CStrings(envs);
  int err[2];
  Result r;
  if (pipe2(err, O_CLOEXEC) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], 2);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  close(err[1]);
  while_running(pid);
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.err.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

Result RunWithStderrPipe(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env) {
  return RunWithStderrPipe(argv, env, [](pid_t) {});
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

const std::vector<std::string> kShimEnv = {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB,
                                           "HANGWATCH_THRESHOLD_MS=100", "HANGWATCH_LOG=1",
                                           "HANGWATCH_LAG_INTERVAL_MS=0"};

// Positive control for the tests below: on a pipe the live report is there.
TEST(PreloadOutput, PipeOnDescriptorTwoGetsTheHangButNoLagLine) {
  const Result r = RunWithStderrPipe({PRELOAD_STALL_FIXTURE, "500"}, kShimEnv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "hang: ")) << r.err;
  EXPECT_TRUE(Has(r.err, "StallTheMainThread")) << r.err;
  EXPECT_FALSE(Has(r.err, "lag over")) << "the lag line is printed only when asked:\n" << r.err;
  std::vector<std::string> env = kShimEnv;
  env.push_back("HANGWATCH_LOG_LAG=1");
  const Result asked = RunWithStderrPipe({PRELOAD_STALL_FIXTURE, "0"}, env);
  EXPECT_TRUE(Has(asked.err, "lag over")) << asked.err;
}

// A daemon closed 0-2 and opened its data file, which became descriptor 2: the shim's hang
// report must not land in it.
TEST(PreloadOutput, DaemonsDataFileOnDescriptorTwoIsNeverWritten) {
  TempDir dir;
  const std::string data = dir.path() + "/app.db";
  const std::string content = "the application's own records\n";
  std::ofstream(data) << content;
  const Result r = RunWithStderrPipe({PRELOAD_STALL_FIXTURE, "--detach", data, "500"}, kShimEnv);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(ReadFile(data), content) << "the shim wrote into the daemon's data file";
}

// ---- set-user-ID programs ----

// The directory libc was loaded from: one of the dynamic linker's trusted directories, the only
// place it preloads from in a set-user-ID program.
std::string TrustedLibraryDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&::poll), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string libc = info.dli_fname;
  return libc.substr(0, libc.rfind('/'));
}

// /proc/PID/auxv has AT_SECURE = 1.
bool IsSecureExecution(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/auxv", std::ios::binary);
  unsigned long pair[2];
  while (in.read(reinterpret_cast<char*>(pair), sizeof pair)) {
    if (pair[0] == 23 /* AT_SECURE */) return pair[1] != 0;
    if (pair[0] == 0) break;
  }
  return false;
}

bool MapsMention(pid_t pid, const std::string& what) {
  return Has(ReadFile("/proc/" + std::to_string(pid) + "/maps"), what);
}

// A set-user-ID copy of the program (owned by nobody, run by root: the effective user changes,
// so the process runs in secure-execution mode), with the shim preloaded the only way the
// dynamic linker allows there: by a bare name, from a trusted directory, itself set-user-ID. A
// copy of the shim under a name of this test's is put there for the run and removed after.
// The shim reads no HANGWATCH_* variable in such a process (secure_getenv): what is checked is
// that with its defaults it prints nothing (no stack, no addresses) and writes no file.
TEST(PreloadOutput, SetUserIdProgramGetsNothingFromTheShim) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a set-user-ID program and a trusted library";
  const std::string libdir = TrustedLibraryDirectory();
  ASSERT_FALSE(libdir.empty());
  const std::string shim_name =
      "libhangwatch_preload_setuid_test_" + std::to_string(getpid()) + ".so";
  const std::string shim = libdir + "/" + shim_name;
  TempDir dir;
  const std::string program = dir.path() + "/setuid_stall";
  {
    std::ifstream in_shim(HANGWATCH_PRELOAD_LIB, std::ios::binary);
    std::ofstream out_shim(shim, std::ios::binary);
    if (!out_shim) GTEST_SKIP() << "cannot write a library into " << libdir;
    out_shim << in_shim.rdbuf();
    std::ifstream in_prog(PRELOAD_STALL_FIXTURE, std::ios::binary);
    std::ofstream(program, std::ios::binary) << in_prog.rdbuf();
  }
  struct Remove {
    std::string path;
    ~Remove() { unlink(path.c_str()); }
  } remove_shim{shim};
  ASSERT_EQ(chmod(shim.c_str(), 04755), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(chown(program.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);  // after chown, which clears the bit

  bool secure = false, shim_loaded = false;
  const Result r = RunWithStderrPipe(
      {program, "1500"}, {"LD_PRELOAD=" + shim_name, "HANGWATCH_REPORT=" + dir.path() + "/r"},
      [&](pid_t pid) {
        // The dynamic linker maps the preloaded shim before main(); the program then stalls for
        // 1.5 s, long enough to look (the bound only guards against a program that exits).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!shim_loaded && std::chrono::steady_clock::now() < deadline && kill(pid, 0) == 0) {
          shim_loaded = MapsMention(pid, shim_name);
          secure = IsSecureExecution(pid);
          if (!shim_loaded) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (!secure && shim_loaded) GTEST_SKIP() << "AT_SECURE is not set here (no_new_privs?)";
  ASSERT_TRUE(shim_loaded) << "the dynamic linker did not preload " << shim
                           << ": the test exercises nothing";
  EXPECT_EQ(r.err, "") << "the shim printed in a set-user-ID process";
  EXPECT_NE(access((dir.path() + "/r").c_str(), F_OK), 0) << "a file was written";
}

}  // namespace
}  // namespace hangwatch::testing
