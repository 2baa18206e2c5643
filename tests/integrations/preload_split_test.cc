// The shim is two libraries: the loader LD_PRELOAD names (libc only) and the agent library it
// loads when the main thread first waits for events. A process that never waits (a compiler,
// a shell, sleep) maps nothing of the shim but the loader; one that waits gets the agent
// library and is watched; a loader whose agent library is missing says so in one line and in
// the launch log, and the program runs on unharmed.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"

namespace hangwatch::testing {
namespace {

constexpr char kAgentLibrary[] = "libhangwatch_preload_agent.so";

std::string Resolved(const std::string& path) {
  char buf[4096];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The files mapped into process `pid` (the path column of /proc/PID/maps).
std::set<std::string> MappedFiles(pid_t pid) {
  std::set<std::string> files;
  std::istringstream maps(ReadFile("/proc/" + std::to_string(pid) + "/maps"));
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find(" /");
    if (slash != std::string::npos) files.insert(line.substr(slash + 1));
  }
  return files;
}

// The state letter of /proc/PID/stat ('?' when gone).
char State(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

// Waits (at most 20 s) for `ready()`.
template <typename Ready>
bool WaitFor(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Lines of the launch log `path` for process `pid` starting with `event`.
std::vector<std::string> LaunchLogLines(const std::string& path, const std::string& event,
                                        pid_t pid) {
  std::vector<std::string> out;
  std::istringstream log(ReadFile(path));
  const std::string prefix = event + " " + std::to_string(pid) + " ";
  for (std::string line; std::getline(log, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(PreloadSplit, ProcessThatNeverWaitsMapsOnlyTheLoader) {
  TempDir dir;
  const std::string launch_log = dir.path() + "/launch.log";
  // sleep never waits for events (nanosleep): the shim never arms in it.
  ChildProcess plain({"/bin/sleep", "60"}, {});
  ChildProcess shimmed({"/bin/sleep", "60"},
                       {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_LAUNCH_LOG=" + launch_log});
  // Both are asleep, past their start-up; the shim's constructor has run (its "load" line).
  ASSERT_TRUE(WaitFor([&] {
    return State(plain.pid()) == 'S' && State(shimmed.pid()) == 'S' &&
           !LaunchLogLines(launch_log, "load", shimmed.pid()).empty();
  })) << ReadFile(launch_log);

  const std::set<std::string> without = MappedFiles(plain.pid());
  const std::set<std::string> with = MappedFiles(shimmed.pid());
  std::set<std::string> added, missing;
  for (const auto& f : with) {
    if (without.count(f) == 0) added.insert(f);
  }
  for (const auto& f : without) {
    if (with.count(f) == 0) missing.insert(f);
  }
  // Nothing but the loader: no C++ runtime, no Abseil, no spdlog, no elfutils, no agent.
  EXPECT_EQ(added, std::set<std::string>{Resolved(HANGWATCH_PRELOAD_LIB)});
  EXPECT_TRUE(missing.empty());
}

// Reaches its event loop (select), stalls for 400 ms, then idles in select until killed.
constexpr char kWaitingApp[] =
    "import os, select, sys, time\n"
    "print(os.getpid(), flush=True)\n"
    "select.select([], [], [], 0.05)\n"
    "end = time.monotonic() + 0.4\n"
    "while time.monotonic() < end: pass\n"
    "select.select([], [], [], 60)\n";

TEST(PreloadSplit, ProcessThatWaitsLoadsTheAgentLibraryAndIsWatched) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir;
  const std::string launch_log = dir.path() + "/launch.log";
  const std::string report = dir.path() + "/report.jsonl";
  ChildProcess app({"/usr/bin/python3", "-c", kWaitingApp},
                   {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_LAUNCH_LOG=" + launch_log,
                    "HANGWATCH_REPORT=" + report, "HANGWATCH_THRESHOLD_MS=100", "HANGWATCH_LOG=0"});
  std::string pid_line;
  ASSERT_TRUE(app.ReadLine(&pid_line, std::chrono::seconds(20)));
  const pid_t pid = app.pid();
  ASSERT_EQ(pid_line, std::to_string(pid));
  // Watched: the stall is reported (written when the second select begins).
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(report).find("\"type\":\"hang\"") != std::string::npos;
  })) << ReadFile(launch_log);
  EXPECT_EQ(LaunchLogLines(launch_log, "armed", pid).size(), 1u) << ReadFile(launch_log);

  const std::string agent = Resolved(HANGWATCH_PRELOAD_LIB);
  const std::string agent_path = agent.substr(0, agent.rfind('/') + 1) + kAgentLibrary;
  EXPECT_EQ(MappedFiles(pid).count(agent_path), 1u) << agent_path;
}

// Both libraries keep the agent to themselves (version scripts): a program that links
// libhangwatch itself, as this test does, never binds to the shim's copy. The agent library
// exports its entry and nothing else; the loader has no agent in it at all.
TEST(PreloadSplit, NeitherLibraryExportsTheAgent) {
  const std::string loader = Resolved(HANGWATCH_PRELOAD_LIB);
  const std::string agent_path = loader.substr(0, loader.rfind('/') + 1) + kAgentLibrary;
  void* agent = dlopen(agent_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(agent, nullptr) << dlerror();
  EXPECT_NE(dlsym(agent, "hangwatch_preload_agent_init"), nullptr);
  void* shim = dlopen(loader.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(shim, nullptr) << dlerror();
  for (void* handle : {agent, shim}) {
    EXPECT_EQ(dlsym(handle, "_ZN9hangwatch5StartERKNS_6ConfigE"), nullptr);
    EXPECT_EQ(dlsym(handle, "_ZN9hangwatch4StopEv"), nullptr);
    EXPECT_EQ(dlsym(handle, "_ZN9hangwatch8internal16g_run_loop_stateE"), nullptr);
  }
  EXPECT_EQ(dlsym(shim, "hangwatch_preload_agent_init"), nullptr);
}

// LD_PRELOAD=./libhangwatch_preload.so, and a program that changes directory before its loop:
// the agent library is still found beside the loader.
TEST(PreloadSplit, RelativePreloadPathSurvivesAChdirBeforeTheFirstWait) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir;
  const std::string launch_log = dir.path() + "/launch.log";
  const std::string loader = Resolved(HANGWATCH_PRELOAD_LIB);
  const std::string loader_dir = loader.substr(0, loader.rfind('/'));
  ChildProcess app({"/bin/sh", "-c",
                    "cd '" + loader_dir +
                        "' && LD_PRELOAD=./libhangwatch_preload.so exec /usr/bin/python3 -c '"
                        "import os, select\n"
                        "os.chdir(\"/\")\n"
                        "select.select([], [], [], 0.05)\n"
                        "print(os.getpid(), flush=True)\n'"},
                   {"HANGWATCH_LAUNCH_LOG=" + launch_log, "HANGWATCH_LOG=0"});
  std::string pid_line;
  ASSERT_TRUE(app.ReadLine(&pid_line, std::chrono::seconds(20)));
  EXPECT_EQ(app.WaitAtMost(std::chrono::seconds(20)), 0);
  EXPECT_EQ(LaunchLogLines(launch_log, "armed", std::stoi(pid_line)).size(), 1u)
      << ReadFile(launch_log);
}

TEST(PreloadSplit, MissingAgentLibraryIsOneLineAndAnOffEventNeverACrash) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir;
  // The loader alone, without the agent library beside it.
  const std::string loader = dir.path() + "/libhangwatch_preload.so";
  {
    std::ifstream in(HANGWATCH_PRELOAD_LIB, std::ios::binary);
    std::ofstream out(loader, std::ios::binary);
    out << in.rdbuf();
  }
  const std::string launch_log = dir.path() + "/launch.log";
  // stderr onto stdout (a pipe: one the shim may print on), then the event loop.
  ChildProcess app({"/usr/bin/python3", "-c",
                    "import os, select\n"
                    "os.dup2(1, 2)\n"
                    "select.select([], [], [], 0.05)\n"
                    "select.select([], [], [], 0.05)\n"
                    "print('still running', flush=True)\n"},
                   {"LD_PRELOAD=" + loader, "HANGWATCH_LAUNCH_LOG=" + launch_log});
  std::vector<std::string> lines;
  for (std::string line; app.ReadLine(&line, std::chrono::seconds(20));) lines.push_back(line);
  EXPECT_EQ(app.WaitAtMost(std::chrono::seconds(20)), 0);

  const std::string why = "cannot load " + dir.path() + "/" + kAgentLibrary;
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("hangwatch preload: not watching: " + why, 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "still running");
  const auto off = LaunchLogLines(launch_log, "off", app.pid());
  ASSERT_EQ(off.size(), 1u) << ReadFile(launch_log);
  EXPECT_NE(off[0].find("\t" + why), std::string::npos) << off[0];
  EXPECT_TRUE(LaunchLogLines(launch_log, "armed", app.pid()).empty());
}

}  // namespace
}  // namespace hangwatch::testing
