// The launch log: the shim's writers (integrations/preload/launch_log.cc) read back by
// `hangwatch run`'s reader (tools/run/launch_log_reader.cc); /proc/PID/stat parsing; why a program
// could not load the shim; the run directory's owner file and the clean-up of stale ones; the
// program a run is for, past its wrappers (run_program.h).
#include "integrations/preload/launch_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "cli_util.h"
#include "tools/run/launch_log_reader.h"
#include "tools/run/run_dir.h"
#include "tools/run/run_processes.h"
#include "tools/run/run_program.h"
#include "tools/run/run_summary.h"

extern char* program_invocation_short_name;

namespace hangwatch::testing {
namespace {

using preload::LaunchLogArmed;
using preload::LaunchLogExec;
using preload::LaunchLogExecFailed;
using preload::LaunchLogInit;
using preload::LaunchLogLoaded;
using preload::LaunchLogOff;
using tools::LaunchLog;
using tools::ParseLaunchLog;
using tools::ReadLaunchLog;

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Points the writers at `path` (empty: unset).
void UseLog(const std::string& path) {
  if (path.empty()) {
    unsetenv("HANGWATCH_LAUNCH_LOG");
  } else {
    setenv("HANGWATCH_LAUNCH_LOG", path.c_str(), 1);
  }
  LaunchLogInit();
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class LaunchLogTest : public ::testing::Test {
 protected:
  void TearDown() override { UseLog(""); }
  TempDir dir_;
};

TEST_F(LaunchLogTest, EveryEventIsOneLineNamingThisProcess) {
  const std::string path = dir_ / "launch.log";
  UseLog(path);
  errno = 1234;
  LaunchLogLoaded();
  char* const true_argv[] = {const_cast<char*>("true"), nullptr};
  LaunchLogExec("/usr/bin/true", true_argv, preload::ExecShim::kKept, /*spawn=*/false);
  LaunchLogExecFailed(ENOENT);
  LaunchLogArmed();
  LaunchLogOff("cannot\tstart\nthe agent");
  EXPECT_EQ(errno, 1234) << "the writers keep errno (they run right before execve)";

  const std::string text = ReadFile(path);
  EXPECT_EQ(CountLines(text), 5u) << text;
  const LaunchLog log = ParseLaunchLog(text);
  EXPECT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.processes.size(), 1u) << text;
  const auto& p = log.processes[0];
  EXPECT_EQ(p.pid, getpid());
  EXPECT_EQ(p.ppid, getppid());
  const tools::ProcStat self = tools::ReadProcStat(getpid());
  ASSERT_TRUE(self.exists);
  EXPECT_NE(self.start_time, 0u);
  EXPECT_EQ(p.start_time, self.start_time);
  ASSERT_EQ(p.images.size(), 1u) << "an exec that did not load again keeps the image";
  const auto& image = p.images[0];
  EXPECT_EQ(image.name, program_invocation_short_name);
  EXPECT_EQ(image.exe, SelfExe());
  EXPECT_TRUE(image.loaded);
  EXPECT_TRUE(image.armed);
  EXPECT_TRUE(image.off);
  EXPECT_EQ(image.off_reason, "cannot start the agent") << "tabs and newlines become spaces";
  EXPECT_TRUE(tools::IsAlive(p.pid, p.start_time));
  EXPECT_FALSE(tools::IsAlive(p.pid, p.start_time + 1)) << "a reused pid is another process";
}

TEST_F(LaunchLogTest, UnsetOrRelativePathWritesNothing) {
  UseLog("");
  LaunchLogLoaded();
  LaunchLogArmed();
  const std::string cwd = dir_.path();
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof old), nullptr);
  ASSERT_EQ(chdir(cwd.c_str()), 0);
  UseLog("relative.log");
  LaunchLogLoaded();
  ASSERT_EQ(chdir(old), 0);
  EXPECT_NE(access((dir_ / "relative.log").c_str(), F_OK), 0);
}

TEST_F(LaunchLogTest, ForkedChildIsAnotherProcessWithItsStartTime) {
  const std::string path = dir_ / "launch.log";
  UseLog(path);
  LaunchLogLoaded();
  const pid_t child = fork();
  if (child == 0) {
    // A name with spaces and parentheses: the start time is still field 22 of /proc/PID/stat.
    prctl(PR_SET_NAME, "a) (b c", 0, 0, 0);
    LaunchLogLoaded();
    LaunchLogArmed();
    _exit(0);
  }
  ASSERT_EQ(WaitExit(child), 0);
  const LaunchLog log = ReadLaunchLog(path);
  ASSERT_EQ(log.processes.size(), 2u) << ReadFile(path);
  const auto& c = log.processes[1];
  EXPECT_EQ(c.pid, child);
  EXPECT_EQ(c.ppid, getpid());
  EXPECT_GE(c.start_time, log.processes[0].start_time);
  EXPECT_NE(c.ArmedImage(), nullptr);
  EXPECT_EQ(log.processes[0].ArmedImage(), nullptr);
  EXPECT_FALSE(tools::IsAlive(c.pid, c.start_time)) << "reaped";
  EXPECT_TRUE(log.AnyArmed());
  EXPECT_EQ(log.Find(child), &log.processes[1]);
}

TEST_F(LaunchLogTest, ConcurrentWritersNeverInterleave) {
  const std::string path = dir_ / "launch.log";
  UseLog(path);
  constexpr int kChildren = 8, kLines = 300;
  std::string long_path(3000, 'x');
  long_path[0] = '/';
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < kLines; ++i) {
        LaunchLogExec(long_path.c_str(), nullptr, preload::ExecShim::kKept, false);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) ASSERT_EQ(WaitExit(pid), 0);
  const LaunchLog log = ReadLaunchLog(path);
  EXPECT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.processes.size(), static_cast<size_t>(kChildren));
  for (const auto& p : log.processes) {
    ASSERT_EQ(p.images.size(), 1u);
    EXPECT_EQ(p.Last().execs.size(), static_cast<size_t>(kLines));
    for (const auto& e : p.Last().execs) ASSERT_EQ(e.path, long_path);
  }
}

// A process of the run (armed, alive) forks a child that has not run yet, so has not written
// its load line: `run` waits for it (on a busy machine the child of a tmux server may get the CPU
// only after the command ended). Once the child executes a program without writing a line, it
// runs without the shim and never will: not waited for.
TEST_F(LaunchLogTest, UnloggedForkChildOfALiveProcessIsWaitedForUntilItExecutes) {
  const std::string path = dir_ / "launch.log";
  UseLog(path);
  int to_parent[2], go[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t parent = fork();
  if (parent == 0) {
    LaunchLogLoaded();
    LaunchLogArmed();
    const pid_t child = fork();  // no shim here: the child writes nothing
    if (child == 0) {
      char c;
      if (read(go[0], &c, 1) == 1) execl("/usr/bin/sleep", "sleep", "30", nullptr);
      _exit(127);
    }
    if (write(to_parent[1], &child, sizeof child) != sizeof child) _exit(1);
    for (;;) pause();  // alive until the test kills it
  }
  close(to_parent[1]);
  pid_t child = 0;
  // Both end with the test, whatever failed.
  struct KillBoth {
    const pid_t& parent;
    const pid_t& child;
    ~KillBoth() {
      if (child > 0) kill(child, SIGKILL);
      kill(parent, SIGKILL);
      WaitExit(parent);
    }
  } kill_both{parent, child};
  ASSERT_EQ(read(to_parent[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  const LaunchLog log = ReadLaunchLog(path);
  ASSERT_EQ(log.processes.size(), 1u) << ReadFile(path);
  EXPECT_TRUE(tools::WaitingToArm(log, "")) << "the fork child is about to write its load line";

  ASSERT_EQ(write(go[1], "x", 1), 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string exe;
  while (exe != "/usr/bin/sleep" && std::chrono::steady_clock::now() < deadline) {
    char buf[256];
    const ssize_t n =
        readlink(("/proc/" + std::to_string(child) + "/exe").c_str(), buf, sizeof buf - 1);
    exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    usleep(20000);
  }
  ASSERT_EQ(exe, "/usr/bin/sleep");
  EXPECT_FALSE(tools::WaitingToArm(log, "")) << "it runs sleep without the shim";
  close(go[0]);
  close(go[1]);
  close(to_parent[0]);
}

TEST(LaunchLogReader, ImagesFollowExecsThatLoadedAgain) {
  const LaunchLog log = ParseLaunchLog(
      "load 100 1 5000 sh\t/usr/bin/dash\n"
      "exec 100 1 5000 sh\tkept\t/usr/local/bin/python3\tpython3 app.py\n"
      "execfail 100 1 5000 sh\t2\n"  // a failed attempt of the PATH search
      "exec 100 1 5000 sh\tkept\t/usr/bin/python3\tpython3 app.py\n"
      "load 100 1 5000 python3\t/usr/bin/python3.11\n"
      "load 101 100 5009 python3\t/usr/bin/python3.11\n"  // forked
      "armed 101 100 5009 python3\t\n"
      "exec 102 100 5010 python3\tkept\t/usr/bin/true\ttrue\n"  // a vfork child: no load of its own
      "load 102 100 5010 true\t/usr/bin/true\n"
      "bogus line\n"
      "load x 1 2 name\tdetail\n"
      "armed 100 1 5000 python3\t\n"
      "load 100 1 7777 reused\t/usr/bin/reused\n"
      "load 103 1 5020 torn\t/usr/bin/to");
  EXPECT_EQ(log.skipped_lines, 2u);
  ASSERT_EQ(log.processes.size(), 4u);
  const auto& sh = log.processes[0];
  ASSERT_EQ(sh.images.size(), 2u);
  EXPECT_EQ(sh.images[0].name, "sh");
  EXPECT_EQ(sh.images[0].LastExec()->path, "/usr/bin/python3");
  EXPECT_EQ(sh.images[1].name, "python3");
  EXPECT_EQ(sh.images[1].exe, "/usr/bin/python3.11");
  EXPECT_TRUE(sh.images[1].armed);
  EXPECT_FALSE(sh.images[0].armed);
  EXPECT_EQ(sh.ArmedImage(), &sh.images[1]);
  const auto& spawned = log.processes[2];
  ASSERT_EQ(spawned.images.size(), 2u);
  EXPECT_FALSE(spawned.images[0].loaded);
  EXPECT_EQ(spawned.images[1].name, "true");
  EXPECT_EQ(log.processes[3].pid, 100);
  EXPECT_EQ(log.processes[3].start_time, 7777u) << "same pid, another start: another process";
  EXPECT_EQ(log.Find(100), &log.processes[3]);
}

TEST(LaunchLogReader, ProcStatNamesWithParentheses) {
  const auto s = tools::ParseProcStat(
      "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
  EXPECT_TRUE(s.exists);
  EXPECT_EQ(s.state, 'S');
  EXPECT_EQ(s.start_time, 98765u);
  EXPECT_EQ(s.ppid, 1);
  EXPECT_FALSE(tools::ParseProcStat("4242 (x S 1 2").exists);
  EXPECT_FALSE(tools::ParseProcStat("4242 (x) S 1 2 3").exists);
  EXPECT_FALSE(tools::ReadProcStat(0).exists);
}

TEST(LaunchLogReader, WhyAProgramDidNotLoadTheShim) {
  TempDir dir;
  EXPECT_TRUE(Has(tools::WhyNotLoaded(STATIC_PROGRAM, ""), "statically linked")) << STATIC_PROGRAM;
  EXPECT_EQ(tools::WhyNotLoaded("/bin/sh", ""), "") << "a dynamic program: nothing to say";
  EXPECT_TRUE(Has(tools::WhyNotLoaded(dir / "missing", ""), "does not exist"));
  // Looked up in the search path like execvp does.
  const std::string copy = dir / "static_copy";
  ASSERT_EQ(std::system(("cp " STATIC_PROGRAM " " + copy).c_str()), 0);
  EXPECT_TRUE(
      Has(tools::WhyNotLoaded("static_copy", "/nonexistent:" + dir.path()), "statically linked"));
  // Set-user-ID: the dynamic linker ignores LD_PRELOAD (for a caller that is not its owner).
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);
  EXPECT_TRUE(Has(tools::WhyNotLoaded(copy, ""), "set-user-ID")) << tools::WhyNotLoaded(copy, "");
  // A script: its interpreter is what runs.
  WriteFile(dir / "script", "#!" + copy + " -x\nexit 0\n");
  ASSERT_EQ(chmod((dir / "script").c_str(), 0755), 0);
  EXPECT_TRUE(Has(tools::WhyNotLoaded(dir / "script", ""), "set-user-ID"));
  WriteFile(dir / "plain", "data");
  EXPECT_TRUE(Has(tools::WhyNotLoaded(dir / "plain", ""), "not executable"));
}

TEST(LaunchLogReader, ExplainsWhyNothingWasWatched) {
  using tools::ExplainNothingWatched;
  EXPECT_EQ(ExplainNothingWatched({}, 1, STATIC_PROGRAM, ""),
            "static_program did not load the shim (a statically linked program: nothing can "
            "be preloaded into it)");
  const LaunchLog exec_static = ParseLaunchLog(
      "load 100 1 5 python3\t/usr/bin/python3.11\n"
      "exec 100 1 5 python3\tkept\t" STATIC_PROGRAM "\tstatic_program\n");
  EXPECT_EQ(ExplainNothingWatched(exec_static, 100, "python3", ""),
            "python3 never waited for events; it executed " STATIC_PROGRAM
            ", which did not load the shim (a statically linked program: nothing can be "
            "preloaded into it)");
  const LaunchLog chain = ParseLaunchLog(
      "load 100 1 5 sh\t/usr/bin/dash\n"
      "exec 100 1 5 sh\tkept\t/usr/bin/python3\tpython3\n"
      "load 100 1 5 python3\t/usr/bin/python3.11\n"
      "exec 100 1 5 python3\tkept\t/usr/bin/true\ttrue\n"
      "load 100 1 5 true\t/usr/bin/true\n"
      "load 101 100 6 true\t/usr/bin/true\n");
  EXPECT_EQ(ExplainNothingWatched(chain, 100, "sh", ""),
            "true never waited for events (sh executed /usr/bin/python3, which executed "
            "/usr/bin/true); 1 other process loaded the shim and never waited for events "
            "either");
  const LaunchLog off = ParseLaunchLog(
      "load 100 1 5 prog\t/usr/bin/prog\n"
      "off 100 1 5 prog\tsignal 34 is in use\n");
  EXPECT_EQ(ExplainNothingWatched(off, 100, "prog", ""),
            "prog could not be watched: signal 34 is in use");
  // Another process that could not be watched says why, not "never waited for events".
  const LaunchLog go_child = ParseLaunchLog(
      "load 100 1 5 sh\t/usr/bin/dash\n"
      "load 101 100 6 gowait\t/tmp/gowait\n"
      "off 101 100 6 gowait\ta Go program: no libc waits\n");
  EXPECT_EQ(ExplainNothingWatched(go_child, 100, "sh", ""),
            "sh never waited for events; 1 other process loaded the shim: gowait could not be "
            "watched: a Go program: no libc waits");
  const LaunchLog go_and_true = ParseLaunchLog(
      "load 100 1 5 sh\t/usr/bin/dash\n"
      "load 101 100 6 true\t/usr/bin/true\n"
      "load 102 100 7 gowait\t/tmp/gowait\n"
      "off 102 100 7 gowait\ta Go program: no libc waits\n");
  EXPECT_EQ(ExplainNothingWatched(go_and_true, 100, "sh", ""),
            "sh never waited for events; 2 other processes loaded the shim, none waited for "
            "events (gowait could not be watched: a Go program: no libc waits)");
}

TEST(RunSummary, WatchedProcessesCountHangsByPid) {
  const LaunchLog log = ParseLaunchLog(
      "load 100 1 5 sh\t/usr/bin/dash\n"
      "load 101 100 6 server\t/usr/bin/server\n"
      "armed 101 100 6 server\t\n"
      "load 102 101 7 server\t/usr/bin/server\n"
      "armed 102 101 7 server\t\n");
  tools::Report report;
  for (int64_t pid : {102, 102, 300}) {
    HangRecord h;
    h.pid = pid;
    h.process = "/usr/bin/other";
    report.hangs.push_back(h);
  }
  auto watched = tools::WatchedProcesses(log, report);
  ASSERT_EQ(watched.size(), 3u);
  EXPECT_EQ(watched[0].pid, 101);
  EXPECT_EQ(watched[0].hangs, 0u);
  EXPECT_EQ(watched[1].pid, 102);
  EXPECT_EQ(watched[1].hangs, 2u);
  EXPECT_EQ(watched[2].pid, 300) << "records of a process the log does not name";
  EXPECT_EQ(watched[2].name, "other");
  watched[1].running = true;
  EXPECT_EQ(tools::FormatWatched(watched),
            "hangwatch run: watched 3 processes:\n"
            "hangwatch run:   pid 101 server (/usr/bin/server): no hangs\n"
            "hangwatch run:   pid 102 server (/usr/bin/server): 2 hangs, still running\n"
            "hangwatch run:   pid 300 other (/usr/bin/other): 1 hang\n");
}

// A run directory whose owner is `pid` started at `start`; `log`: its launch.log text.
std::string MakeRunDir(const std::string& parent, int64_t pid, uint64_t start,
                       const std::string& log) {
  std::string path;
  std::string error;
  EXPECT_TRUE(tools::CreateRunDir(parent, "", &path, &error)) << error;
  WriteFile(path + "/run.pid", std::to_string(pid) + " " + std::to_string(start) + "\n");
  if (!log.empty()) WriteFile(path + "/launch.log", log);
  return path;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(RunDir, OwnerFileNamesThisProcess) {
  TempDir parent;
  std::string path, error;
  ASSERT_TRUE(tools::CreateRunDir(parent.path(), "", &path, &error)) << error;
  EXPECT_EQ(path.rfind(parent.path() + "/hangwatch-run.", 0), 0u) << path;
  const auto self = tools::ReadProcStat(getpid());
  EXPECT_EQ(ReadFile(path + "/run.pid"),
            std::to_string(getpid()) + " " + std::to_string(self.start_time) + "\n");
  EXPECT_TRUE(tools::RunDirInUse(path)) << "its owner lives";
  std::string error2;
  EXPECT_FALSE(tools::CreateRunDir("/nonexistent", "", &path, &error2));
  EXPECT_TRUE(Has(error2, "/nonexistent")) << error2;
}

TEST(RunDir, OnlyDirectoriesNoLongerInUseAreRemoved) {
  TempDir parent;
  // A process that is gone: a reaped child.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(WaitExit(dead), 0);
  const uint64_t my_start = tools::ReadProcStat(getpid()).start_time;
  const std::string me = std::to_string(getpid());
  const std::string dead_log = "armed " + std::to_string(dead) + " 1 5 gone\t\n";

  const std::string stale = MakeRunDir(parent.path(), dead, 5, dead_log);
  WriteFile(stale + "/open-hang." + std::to_string(dead), "left behind");
  const std::string owner_alive = MakeRunDir(parent.path(), getpid(), my_start, "");
  const std::string owner_reused = MakeRunDir(parent.path(), getpid(), my_start + 1, "");
  const std::string daemon_alive = MakeRunDir(
      parent.path(), dead, 5, "load " + me + " 1 " + std::to_string(my_start) + " d\t/x\n");
  const std::string daemon_gone = MakeRunDir(
      parent.path(), dead, 5, "armed " + me + " 1 " + std::to_string(my_start + 1) + " d\t\n");
  const std::string locked = MakeRunDir(parent.path(), dead, 5, "");
  const int lock_fd = open((locked + "/open-hang.77").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock_fd, 0);
  ASSERT_EQ(flock(lock_fd, LOCK_EX), 0);
  std::string no_owner = parent / "hangwatch-run.abcdef";
  ASSERT_EQ(mkdir(no_owner.c_str(), 0700), 0);
  std::string not_ours = parent / "hangwatch-run.long-name";
  ASSERT_EQ(mkdir(not_ours.c_str(), 0700), 0);
  WriteFile(not_ours + "/run.pid", std::to_string(dead) + " 5\n");

  EXPECT_EQ(tools::LockedOpenHangFiles(locked), std::vector<int64_t>{77});
  const auto removed = tools::RemoveStaleRunDirs(parent.path());
  EXPECT_EQ(removed.size(), 3u);
  EXPECT_FALSE(Exists(stale));
  EXPECT_FALSE(Exists(owner_reused));
  EXPECT_FALSE(Exists(daemon_gone));
  EXPECT_TRUE(Exists(owner_alive));
  EXPECT_TRUE(Exists(daemon_alive));
  EXPECT_TRUE(Exists(locked));
  EXPECT_TRUE(Exists(no_owner)) << "may be being created";
  EXPECT_TRUE(Exists(not_ours)) << "not a name mkdtemp gave us";
  close(lock_fd);
  EXPECT_TRUE(Exists(locked + "/open-hang.77"));
  EXPECT_EQ(tools::RemoveStaleRunDirs(parent.path()), std::vector<std::string>{locked})
      << "its process released the lock (ended)";
}

TEST(RunSummary, JunitErrorAndWaitStatus) {
  TempDir dir;
  WriteFile(dir / "junit.xml", tools::FormatJunitError("sh -c \"x<y\"", "not-watched",
                                                       "no process was watched: a & b", 1.5));
  const auto v =
      RunCommand({"/usr/bin/xmllint", "--noout", "--schema", JUNIT_XSD, dir / "junit.xml"});
  EXPECT_EQ(v.exit_code, 0) << v.err << ReadFile(dir / "junit.xml");
  const std::string xml = ReadFile(dir / "junit.xml");
  EXPECT_TRUE(Has(xml, "errors=\"1\"")) << xml;
  EXPECT_TRUE(Has(xml, "<error type=\"not-watched\" message=\"no process was watched: a &amp; b\""))
      << xml;
  EXPECT_EQ(tools::DescribeWaitStatus(3 << 8), "exited with status 3");
  EXPECT_EQ(tools::DescribeWaitStatus(9), "was killed by signal 9 (SIGKILL)");
}

// `timeout 60 xvfb-run -a java App` (pids and start times made up; the processes are gone):
// timeout's child executes xvfb-run, whose shell forks Xvfb (it armed) and the subshell that
// executes java, whose main thread joins.
constexpr char kWrappedJava[] =
    "load 100 1 500 timeout\t/usr/bin/timeout\n"
    "load 101 100 501 timeout\t/usr/bin/timeout\n"
    "exec 101 100 501 timeout\tkept\t/usr/bin/xvfb-run\txvfb-run -a java App\n"
    "load 101 100 501 sh\t/usr/bin/dash\n"
    "load 102 101 502 sh\t/usr/bin/dash\n"
    "exec 102 101 502 sh\tkept\t/usr/bin/Xvfb\tXvfb :99 -screen 0 1280x1024x24\n"
    "load 102 101 502 Xvfb\t/usr/bin/Xvfb\n"
    "armed 102 101 502 Xvfb\t\n"
    "load 103 101 503 sh\t/usr/bin/dash\n"
    "exec 103 101 503 sh\tkept\t/usr/bin/xauth\txauth source -\n"
    "load 104 101 504 sh\t/usr/bin/dash\n"
    "exec 104 101 504 sh\tkept\t/usr/bin/java\tjava App\n"
    "load 104 101 504 java\t/usr/lib/jvm/java-17-openjdk-amd64/bin/java\n"
    "join 104 101 504 java\t\n";

TEST(RunProgram, WrappersHandOverToTheCommandTheyRun) {
  const LaunchLog log = ParseLaunchLog(kWrappedJava);
  ASSERT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.processes.size(), 5u);
  EXPECT_TRUE(log.processes[4].Last().main_joined);
  const tools::RunProgram program =
      tools::FindRunProgram(log, 100, "/usr/bin/timeout 60 xvfb-run -a java App");
  ASSERT_EQ(program.process, &log.processes[4]);
  EXPECT_EQ(program.first_image, 1u);
  EXPECT_TRUE(program.handed_over);
  EXPECT_EQ(program.wrapper, "xvfb-run");
  EXPECT_EQ(tools::ProgramName(program), "java");
  EXPECT_FALSE(tools::ProgramWatched(log, program)) << "Xvfb is not a process java started";
  EXPECT_TRUE(tools::IsHelper(log, program, log.processes[2]));
  EXPECT_FALSE(tools::IsHelper(log, program, log.processes[4]));
  const std::string why = tools::WhyProgramNotWatched(program, "/usr/bin");
  EXPECT_EQ(why.rfind("java (run by xvfb-run) never waited for events: its main thread waited in "
                      "pthread_join for another thread",
                      0),
            0u)
      << why;
  EXPECT_TRUE(Has(why, "watch them with --threads loops")) << why;
  // Nothing watched at all: the same reason for java alone.
  const LaunchLog alone = ParseLaunchLog(
      "load 200 1 600 java\t/usr/lib/jvm/java-17-openjdk-amd64/bin/java\n"
      "join 200 1 600 java\t\n");
  EXPECT_TRUE(Has(tools::ExplainNothingWatched(alone, 200, "java", "/usr/bin"),
                  "java never waited for events: its main thread waited in pthread_join"));
  // A program that never joined keeps the plain reason.
  const LaunchLog plain = ParseLaunchLog("load 300 1 700 true\t/usr/bin/true\n");
  EXPECT_EQ(tools::ExplainNothingWatched(plain, 300, "true", "/usr/bin"),
            "true never waited for events");
}

// With --threads other than main, java arms at its main thread's join: watched are the threads
// that said `watch` (and the main thread once it says `loop`); with none, nothing was watched.
TEST(RunProgram, ArmedAtAJoinIsWatchedOnlyWhenAThreadWas) {
  constexpr char kArmedAtJoin[] =
      "load 200 1 600 java\t/usr/lib/jvm/java-17-openjdk-amd64/bin/java\n"
      "join 200 1 600 java\tarm\n"
      "armed 200 1 600 java\t\n";
  const LaunchLog batch = ParseLaunchLog(kArmedAtJoin);
  ASSERT_EQ(batch.skipped_lines, 0u);
  EXPECT_EQ(batch.processes[0].ArmedImage(), nullptr);
  EXPECT_TRUE(batch.processes[0].Last().joined_without_loops);
  const std::string why = tools::ExplainNothingWatched(batch, 200, "java", "/usr/bin");
  EXPECT_TRUE(Has(why,
                  "java never waited for events: its main thread waited in pthread_join "
                  "for another thread, and none of the threads --threads selects ran an "
                  "event loop"))
      << why;
  EXPECT_FALSE(Has(why, "watch them with --threads loops")) << why;

  const LaunchLog server =
      ParseLaunchLog(std::string(kArmedAtJoin) + "watch 200 1 600 java\tHTTP-Dispatcher\n");
  ASSERT_EQ(server.skipped_lines, 0u);
  EXPECT_NE(server.processes[0].ArmedImage(), nullptr);
  EXPECT_EQ(server.processes[0].Last().threads_watched, 1u);

  const LaunchLog own_loop = ParseLaunchLog(std::string(kArmedAtJoin) + "loop 200 1 600 java\t\n");
  EXPECT_NE(own_loop.processes[0].ArmedImage(), nullptr) << "its main thread ran a loop";

  // A join without `arm` (--threads main) and an arming later, at a first wait: watched.
  const LaunchLog later = ParseLaunchLog(
      "load 300 1 700 app\t/usr/bin/app\n"
      "join 300 1 700 app\t\n"
      "armed 300 1 700 app\t\n");
  EXPECT_NE(later.processes[0].ArmedImage(), nullptr);
}

TEST(RunProgram, RunnersAndUnknownTailsAreTheProgram) {
  // `make check`: the test it runs is a process it started; make is the program.
  const LaunchLog make = ParseLaunchLog(
      "load 100 1 500 make\t/usr/bin/make\n"
      "load 101 100 501 make\t/usr/bin/make\n"
      "exec 101 100 501 make\tkept\t/bin/sh\tsh -c ./unit_test\n"
      "load 101 100 501 sh\t/usr/bin/dash\n"
      "exec 101 100 501 sh\tkept\t./unit_test\t./unit_test\n"
      "load 101 100 501 unit_test\t/src/unit_test\n"
      "armed 101 100 501 unit_test\t\n");
  const tools::RunProgram program = tools::FindRunProgram(make, 100, "make check");
  EXPECT_EQ(program.process, &make.processes[0]);
  EXPECT_FALSE(program.handed_over);
  EXPECT_TRUE(tools::ProgramWatched(make, program));
  EXPECT_FALSE(tools::IsHelper(make, program, make.processes[1]));
  // A wrapper's command line cut short by the log ("..."): its tail is unknown, so no hand-over.
  const LaunchLog cut = ParseLaunchLog(
      "load 100 1 500 sh\t/usr/bin/dash\n"
      "load 101 100 501 sh\t/usr/bin/dash\n"
      "exec 101 100 501 sh\tkept\t/bin/prog\tprog a...\n");
  EXPECT_FALSE(tools::FindRunProgram(cut, 100, "sh wrap.sh prog a...").handed_over);
  // The trailing words must be whole words: `xprog` does not end with the word `prog`.
  const LaunchLog partial = ParseLaunchLog(
      "load 100 1 500 sh\t/usr/bin/dash\n"
      "load 101 100 501 sh\t/usr/bin/dash\n"
      "exec 101 100 501 sh\tkept\t/bin/prog\tprog\n");
  EXPECT_FALSE(tools::FindRunProgram(partial, 100, "sh xprog").handed_over);
  EXPECT_TRUE(tools::FindRunProgram(partial, 100, "sh -c prog").handed_over);
}

// `npm --prefix /app start` whose start script is `sleep 0.3` (made up like kWrappedJava): the
// kernel runs npm's `#!/usr/bin/env node`, env executes node, whose loop arms; npm forks the
// script's shell, which forks sleep. `script_armed`: the script's program armed instead.
std::string NpmStartLog(const std::string& script_program, bool script_armed) {
  std::string log =
      "load 100 1 500 env\t/usr/bin/env\n"
      "exec 100 1 500 env\tkept\tnode\tnode /usr/bin/npm --prefix /app start\n"
      "load 100 1 500 node\t/usr/bin/node\n"
      "armed 100 1 500 npm\t\n"
      "load 101 100 501 npm start\t/usr/bin/node\n"
      "exec 101 100 501 npm start\tkept\tsh\tsh -c " +
      script_program +
      "\n"
      "load 101 100 501 sh\t/usr/bin/dash\n"
      "load 102 101 502 sh\t/usr/bin/dash\n"
      "exec 102 101 502 sh\tkept\t" +
      script_program + "\t" + script_program +
      "\n"
      "load 102 101 502 prog\t/usr/bin/prog\n";
  if (script_armed) log += "armed 102 101 502 prog\t\n";
  return log;
}

TEST(RunProgram, NpmHandsOverToTheProgramItsScriptRuns) {
  const LaunchLog log = ParseLaunchLog(NpmStartLog("prog", false));
  ASSERT_EQ(log.skipped_lines, 0u);
  ASSERT_EQ(log.processes.size(), 3u);
  const tools::RunProgram program = tools::FindRunProgram(log, 100, "npm --prefix /app start");
  ASSERT_EQ(program.process, &log.processes[2]) << "npm armed, but it is a wrapper";
  EXPECT_EQ(program.first_image, 1u);
  EXPECT_TRUE(program.handed_over);
  EXPECT_EQ(program.wrapper, "npm") << "the script's shell is npm's";
  EXPECT_FALSE(tools::ProgramWatched(log, program));
  EXPECT_TRUE(tools::IsHelper(log, program, log.processes[0])) << "npm's own process";
  EXPECT_EQ(tools::WhyProgramNotWatched(program, ""), "prog (run by npm) never waited for events");
  // The script's program armed: watched.
  const LaunchLog armed = ParseLaunchLog(NpmStartLog("prog", true));
  const tools::RunProgram watched = tools::FindRunProgram(armed, 100, "npm --prefix /app start");
  EXPECT_EQ(watched.process, &armed.processes[2]);
  EXPECT_TRUE(tools::ProgramWatched(armed, watched));
  // node running npm's script by its path, npx, yarn: the same.
  for (const char* line :
       {"node /usr/lib/node_modules/npm/bin/npm-cli.js run dev",
        "nodejs --max-old-space-size=512 /usr/bin/npx prog",
        "node /usr/share/nodejs/yarn/bin/yarn.js dev", "node /x/pnpm.cjs test"}) {
    std::string text = NpmStartLog("prog", false);
    text.replace(text.find("node /usr/bin/npm --prefix /app start"),
                 std::string("node /usr/bin/npm --prefix /app start").size(), line);
    const LaunchLog other = ParseLaunchLog(text);
    const tools::RunProgram p = tools::FindRunProgram(other, 100, "runner");
    EXPECT_EQ(p.process, &other.processes[2]) << line;
  }
}

TEST(RunProgram, NpmThatRanNoScriptOrInstallsIsTheProgram) {
  // `npm --version`: no process of its own; npm is the program, watched.
  const LaunchLog version = ParseLaunchLog(
      "load 100 1 500 env\t/usr/bin/env\n"
      "exec 100 1 500 env\tkept\tnode\tnode /usr/bin/npm --version\n"
      "load 100 1 500 node\t/usr/bin/node\n"
      "armed 100 1 500 npm\t\n");
  const tools::RunProgram alone = tools::FindRunProgram(version, 100, "npm --version");
  EXPECT_EQ(alone.process, &version.processes[0]);
  EXPECT_FALSE(alone.handed_over);
  EXPECT_TRUE(tools::ProgramWatched(version, alone));
  // `npm ci`: the install scripts of dependencies it runs are not the program.
  std::string text = NpmStartLog("prog", false);
  text.replace(text.find("--prefix /app start"), std::string("--prefix /app start").size(), "ci");
  const LaunchLog ci = ParseLaunchLog(text);
  const tools::RunProgram install = tools::FindRunProgram(ci, 100, "npm ci");
  EXPECT_EQ(install.process, &ci.processes[0]);
  EXPECT_TRUE(tools::ProgramWatched(ci, install));
  // node running another script, with npm's path among that script's arguments, is not npm.
  text = NpmStartLog("prog", false);
  text.replace(text.find("node /usr/bin/npm"), std::string("node /usr/bin/npm").size(),
               "node server.js /usr/bin/npm");
  const LaunchLog server = ParseLaunchLog(text);
  EXPECT_EQ(tools::FindRunProgram(server, 100, "node server.js").process, &server.processes[0]);
}

// `npm start` with prestart and poststart scripts: three shells, run one after the other. The
// start script's server armed; the hooks' programs did not: the server is the program.
TEST(RunProgram, NpmLifecycleHooksDoNotHideTheWatchedScript) {
  const LaunchLog log = ParseLaunchLog(
      "load 100 1 500 node\t/usr/bin/node\n"
      "armed 100 1 500 npm\t\n"
      "load 101 100 501 npm start\t/usr/bin/node\n"
      "exec 101 100 501 npm start\tkept\tsh\tsh -c tsc\n"
      "load 101 100 501 sh\t/usr/bin/dash\n"
      "load 102 100 502 npm start\t/usr/bin/node\n"
      "exec 102 100 502 npm start\tkept\tsh\tsh -c node server.js\n"
      "load 102 100 502 sh\t/usr/bin/dash\n"
      "load 103 102 503 sh\t/usr/bin/dash\n"
      "exec 103 102 503 sh\tkept\tnode\tnode server.js\n"
      "load 103 102 503 node\t/usr/bin/node\n"
      "armed 103 102 503 node\t\n"
      "load 104 100 504 npm start\t/usr/bin/node\n"
      "exec 104 100 504 npm start\tkept\tsh\tsh -c echo done\n"
      "load 104 100 504 sh\t/usr/bin/dash\n");
  const tools::RunProgram program = tools::FindRunProgram(log, 100, "/usr/bin/npm start");
  EXPECT_EQ(program.process, &log.processes[3]);
  EXPECT_EQ(program.wrapper, "npm");
  EXPECT_TRUE(tools::ProgramWatched(log, program));
  // Nothing watched but npm: the last script's program is named.
  std::string text = "load 100 1 500 node\t/usr/bin/node\narmed 100 1 500 npm\t\n";
  text +=
      "load 101 100 501 npm start\t/usr/bin/node\n"
      "exec 101 100 501 npm start\tstripped\t/bin/sh\tsh -c java App\n";
  const LaunchLog stripped = ParseLaunchLog(text);
  const tools::RunProgram p = tools::FindRunProgram(stripped, 100, "/usr/bin/npm start");
  EXPECT_EQ(p.process, &stripped.processes[1]);
  EXPECT_EQ(p.first_image, 1u) << "it executed a program without the shim";
  EXPECT_FALSE(tools::ProgramWatched(stripped, p));
  EXPECT_EQ(tools::WhyProgramNotWatched(p, ""),
            "sh (run by npm) was not watched: npm start executed /bin/sh without the shim (the "
            "launch rule: --no-inherit)");
}

}  // namespace
}  // namespace hangwatch::testing
