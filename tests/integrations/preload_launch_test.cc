// The ways people launch programs, under the preload shim: a shell command line, env, timeout,
// nice, a script ending in exec, a version manager's chain of shims; each under dash and bash.
// The shim is in LD_PRELOAD of the outermost program only; the python3 program at the end of
// the chain must be watched (its stall reported with its own pid), because none of the
// wrappers before it ever reached an event loop.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "child_process.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

// Prints its pid, reaches its event loop (select), stalls for half a second, waits again.
constexpr char kApp[] =
    "import os, select, sys, time\n"
    "print(os.getpid(), flush=True)\n"
    "select.select([], [], [], 0.05)\n"
    "end = time.monotonic() + 0.5\n"
    "while time.monotonic() < end: pass\n"
    "select.select([], [], [], 0.05)\n";

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
}

struct Launch {
  const char* name;
  // The command line, given the shell, the directory with app.py and the scripts.
  std::vector<std::string> (*argv)(const std::string& shell, const std::string& dir);
};

const Launch kLaunches[] = {
    {"ShellCommand",
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       return {sh, "-c", "/usr/bin/python3 " + d + "/app.py"};
     }},
    {"Env",
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       return {sh, "-c", "env X=1 /usr/bin/python3 " + d + "/app.py"};
     }},
    {"Timeout",
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       return {sh, "-c", "timeout 60 /usr/bin/python3 " + d + "/app.py"};
     }},
    {"Nice",
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       return {sh, "-c", "nice /usr/bin/python3 " + d + "/app.py"};
     }},
    {"ScriptEndingInExec",
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       WriteExecutable(d + "/run-app", "#!" + sh + "\nX=1\nexport X\nexec /usr/bin/python3 " + d +
                                           "/app.py \"$@\"\n");
       return {d + "/run-app"};
     }},
    {"VersionManagerShims",
     // pyenv-style: a shim script named like the program hands over to a dispatcher script
     // (started through /usr/bin/env) which finally executes the real interpreter.
     [](const std::string& sh, const std::string& d) -> std::vector<std::string> {
       const std::string shell_name = sh.substr(sh.rfind('/') + 1);
       WriteExecutable(d + "/dispatch", "#!/usr/bin/env " + shell_name +
                                            "\nset -e\nprogram=\"$1\"; shift\n"
                                            "exec \"/usr/bin/$program\" \"$@\"\n");
       WriteExecutable(d + "/python3",
                       "#!" + sh + "\nset -e\nexec \"" + d + "/dispatch\" python3 \"$@\"\n");
       return {sh, "-c", d + "/python3 " + d + "/app.py"};
     }},
};

void PrintTo(const Launch& launch, std::ostream* os) { *os << launch.name; }

class LaunchTest : public ::testing::TestWithParam<std::tuple<const char*, Launch>> {};

TEST_P(LaunchTest, TheProgramAtTheEndIsWatched) {
  const std::string shell = std::get<0>(GetParam());
  const Launch& launch = std::get<1>(GetParam());
  TempDir dir;
  WriteExecutable(dir.path() + "/app.py", kApp);
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess child(launch.argv(shell, dir.path()),
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_REPORT=" + report,
                      "HANGWATCH_LOG=0", "HANGWATCH_THRESHOLD_MS=150"});
  std::string line;
  ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(30)));
  const int app_pid = std::atoi(line.c_str());
  EXPECT_EQ(child.Wait(), 0);
  tools::Report r;
  std::string error;
  tools::ParseJsonLines(ReadFile(report), &r, &error);
  bool watched = false;
  for (const HangRecord& h : r.hangs) {
    EXPECT_EQ(h.pid, app_pid) << "only the program at the end reaches an event loop";
    watched |= h.pid == app_pid;
  }
  EXPECT_TRUE(watched) << "python3 (pid " << app_pid << ") was not watched; " << r.hangs.size()
                       << " hangs in the report";
}

INSTANTIATE_TEST_SUITE_P(Shells, LaunchTest,
                         ::testing::Combine(::testing::Values("/bin/dash", "/bin/bash"),
                                            ::testing::ValuesIn(kLaunches)),
                         [](const auto& info) {
                           const std::string shell = std::get<0>(info.param);
                           return shell.substr(shell.rfind('/') + 1) + "_" +
                                  std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace hangwatch::testing
