// `hangwatch run` on processes that outlive the command: a python3 daemon (double fork, setsid),
// Debian's redis-server with --daemonize yes, and a background child that never reaches an
// event loop. Their hangs land in the report with their own pid after `run` has returned; `run`
// names them and keeps its run directory (their open-hang files live there) until they have
// exited; the next `run` removes it then. Real programs, so slow: labelled real_component.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "cli_util.h"
#include "hang/open_hang/open_hang_file.h"
#include "tools/reader/report_reader.h"
#include "tools/run/launch_log_reader.h"
#include "tools/run/run_dir.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kPython[] = "/usr/bin/python3";
constexpr char kRedisServer[] = "/usr/bin/redis-server";
constexpr char kRedisCli[] = "/usr/bin/redis-cli";

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Polls `done` every 20 ms until it holds or `seconds` have passed.
bool WaitFor(const std::function<bool()>& done, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The hangs of the JSON Lines report at `path` (possibly still being written).
tools::Report ReadHangs(const std::string& path) {
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(path), &report, &error);
  return report;
}

// The run directory that `run` said it keeps.
std::string KeptRunDir(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex("(/tmp/hangwatch-run\\.[A-Za-z0-9]{6}) is kept"))
             ? m.str(1)
             : "";
}

bool Alive(int64_t pid, uint64_t start_time) { return tools::IsAlive(pid, start_time); }

// The process has ended and its files are closed: its main thread is a zombie before its other
// threads have closed them, and until then its open-hang file in `run_dir` stays locked (in use:
// the next run leaves the directory).
bool Gone(int64_t pid, uint64_t start_time, const std::string& run_dir) {
  return !Alive(pid, start_time) && tools::LockedOpenHangFiles(run_dir).empty();
}

// Kills a process the test started if it is still alive when the test ends (a failed
// assertion must not leave a daemon behind).
class KillAtEnd {
 public:
  void Set(int64_t pid) {
    pid_ = pid;
    start_ = tools::ReadProcStat(pid).start_time;
  }
  uint64_t start_time() const { return start_; }
  ~KillAtEnd() {
    if (pid_ > 0 && Alive(pid_, start_)) kill(static_cast<pid_t>(pid_), SIGKILL);
  }

 private:
  int64_t pid_ = 0;
  uint64_t start_ = 0;
};

// A daemon the classic way: fork, setsid, fork again; the first parent returns once the daemon
// is in its loop (readiness through a pipe, as forking services do), or at once when a start-up
// time (seconds the daemon spends before its loop) is given as the third argument. The daemon reads
// commands from a FIFO: "stall" blocks its main thread for 0.5 s, "die" blocks it until the test
// kills the process (SIGKILL, as a system watchdog would), "exit" ends it.
constexpr char kPythonDaemon[] =
    "import os, sys, select, time\n"
    "fifo, pidfile = sys.argv[1], sys.argv[2]\n"
    "r, w = os.pipe()\n"
    "if os.fork() > 0:\n"
    "    os.close(w)\n"
    "    if len(sys.argv) < 4: os.read(r, 1)\n"
    "    sys.exit(0)\n"
    "os.close(r)\n"
    "os.setsid()\n"
    "if os.fork() > 0:\n"
    "    os._exit(0)\n"
    "fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)\n"
    "with open(pidfile, 'w') as f: f.write(str(os.getpid()))\n"
    "if len(sys.argv) >= 4: time.sleep(float(sys.argv[3]))\n"
    "select.select([fd], [], [], 0.01)\n"
    "try:\n"
    "    os.write(w, b'x')  # readiness; nobody reads it when a start-up time was given\n"
    "except BrokenPipeError:\n"
    "    pass\n"
    "os.close(w)\n"
    "buf = b''\n"
    "while True:\n"
    "    select.select([fd], [], [], 1.0)\n"
    "    try:\n"
    "        buf += os.read(fd, 100)\n"
    "    except BlockingIOError:\n"
    "        pass\n"
    "    while b'\\n' in buf:\n"
    "        line, buf = buf.split(b'\\n', 1)\n"
    "        if line == b'stall':\n"
    "            end = time.monotonic() + 0.5\n"
    "            while time.monotonic() < end: pass\n"
    "        elif line == b'die':\n"
    "            end = time.monotonic() + 60\n"
    "            while time.monotonic() < end: pass\n"
    "        elif line == b'exit':\n"
    "            sys.exit(0)\n";

void Send(const std::string& fifo, const std::string& command) {
  const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << fifo << ": " << std::strerror(errno);
  const std::string line = command + "\n";
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
}

TEST(RunDaemon, PythonDoubleForkDaemonIsWatchedAndItsDirectoryKeptUntilItExits) {
  TempDir dir;
  const std::string fifo = dir / "ctl", report = dir / "hangs.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  KillAtEnd guard;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--fail-on-hang", "--report",
                             report, "--", kPython, "-c", kPythonDaemon, fifo, dir / "pid"});
  ASSERT_TRUE(Exists(dir / "pid")) << r.err;
  const int64_t daemon = std::stoll(ReadFile(dir / "pid"));
  guard.Set(daemon);
  EXPECT_EQ(r.exit_code, 0) << "watched, no hang yet: " << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: still running after " + std::string(kPython) +
                             " ended: pid " + std::to_string(daemon) + " python3 (watched)\n"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "their hangs go to " + report)) << r.err;
  EXPECT_TRUE(Has(r.err, "no hangs in " + std::string(kPython) + " so far")) << r.err;
  const std::string run_dir = KeptRunDir(r.err);
  ASSERT_FALSE(run_dir.empty()) << r.err;
  EXPECT_TRUE(Exists(run_dir + "/open-hang." + std::to_string(daemon)));

  // Its hang lands in the report after `run` has returned, with the daemon's pid.
  Send(fifo, "stall");
  ASSERT_TRUE(WaitFor([&] { return !ReadHangs(report).hangs.empty(); })) << ReadFile(report);
  const tools::Report hangs = ReadHangs(report);
  ASSERT_EQ(hangs.hangs.size(), 1u);
  EXPECT_EQ(hangs.hangs[0].pid, daemon);
  EXPECT_GE(hangs.hangs[0].duration_ms, 400u);

  // Another run meanwhile leaves the directory alone: the daemon still uses it.
  const auto other = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_TRUE(Exists(run_dir));

  // Once the daemon has exited, the next run removes it.
  Send(fifo, "exit");
  ASSERT_TRUE(WaitFor([&] { return Gone(daemon, guard.start_time(), run_dir); }));
  const auto next = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(Exists(run_dir)) << run_dir << " should have been cleaned up";
}

TEST(RunDaemon, DaemonThatReachesItsLoopAfterTheCommandReturnedIsWaitedFor) {
  TempDir dir;
  const std::string fifo = dir / "ctl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  KillAtEnd guard;
  // The command returns at once; the daemon works 0.4 s before its first wait.
  const auto r = RunCommand({kCli, "run", "--fail-on-hang", "--startup-ms", "20000", "--", kPython,
                             "-c", kPythonDaemon, fifo, dir / "pid", "0.4"});
  ASSERT_TRUE(Exists(dir / "pid")) << r.err;
  const int64_t daemon = std::stoll(ReadFile(dir / "pid"));
  guard.Set(daemon);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "pid " + std::to_string(daemon) + " python3 (watched)")) << r.err;
  Send(fifo, "exit");
  ASSERT_TRUE(WaitFor([&] { return !Alive(daemon, guard.start_time()); }));

  // With a start-up time shorter than that, `run` does not wait so long: nothing was watched
  // yet, and it says which process is still starting.
  const auto early = RunCommand({kCli, "run", "--fail-on-hang", "--startup-ms", "50", "--", kPython,
                                 "-c", kPythonDaemon, fifo, dir / "pid2", "1.5"});
  ASSERT_TRUE(WaitFor([&] { return Exists(dir / "pid2") && !ReadFile(dir / "pid2").empty(); }));
  const int64_t slow = std::stoll(ReadFile(dir / "pid2"));
  KillAtEnd guard2;
  guard2.Set(slow);
  EXPECT_EQ(early.exit_code, 4) << early.err;
  EXPECT_TRUE(Has(early.err, "hangwatch run: no process was watched: ")) << early.err;
  EXPECT_TRUE(Has(early.err, "pid " + std::to_string(slow) + " python3 still running"))
      << early.err;
  EXPECT_TRUE(
      Has(early.err, "pid " + std::to_string(slow) + " python3 (not waiting for events yet)"))
      << early.err;
  Send(fifo, "exit");  // read once it reaches its loop
  ASSERT_TRUE(WaitFor([&] { return !Alive(slow, guard2.start_time()); }));
}

TEST(RunDaemon, DaemonKilledDuringAHangIsReportedByTheNextRun) {
  TempDir dir;
  const std::string fifo = dir / "ctl", report = dir / "hangs.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  KillAtEnd guard;
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10", "--report",
                             report, "--", kPython, "-c", kPythonDaemon, fifo, dir / "pid"});
  ASSERT_TRUE(Exists(dir / "pid")) << r.err;
  const int64_t daemon = std::stoll(ReadFile(dir / "pid"));
  guard.Set(daemon);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string run_dir = KeptRunDir(r.err);
  ASSERT_FALSE(run_dir.empty()) << r.err;

  // Killed once its open-hang file holds the hang, 200 ms long (on a busy machine the watchdog
  // may write it late: a kill at a fixed time could come before it).
  Send(fifo, "die");
  const std::string open_hang = run_dir + "/open-hang." + std::to_string(daemon);
  ASSERT_TRUE(WaitFor([&] {
    HangRecord open;
    std::string error;
    return agent::ReadOpenHangFile(open_hang, &open, &error) == agent::OpenHangReadStatus::kFound &&
           open.duration_ms >= 200;
  }));
  kill(static_cast<pid_t>(daemon), SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return Gone(daemon, guard.start_time(), run_dir); }));
  EXPECT_TRUE(ReadHangs(report).hangs.empty()) << "the hang never closed";
  // The next run finds the dead daemon's open hang and adds it to that run's report. (Another
  // test's run may do it first: then the report has it all the same.)
  const auto next = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"},
                               {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(Exists(run_dir));
  const tools::Report hangs = ReadHangs(report);
  ASSERT_EQ(hangs.hangs.size(), 1u) << ReadFile(report) << next.err;
  EXPECT_EQ(hangs.hangs[0].pid, daemon);
  EXPECT_TRUE(hangs.hangs[0].fatal);
  EXPECT_GE(hangs.hangs[0].duration_ms, 200u);
  if (Has(next.err, "earlier run")) {
    EXPECT_TRUE(Has(next.err, "hangwatch run: pid " + std::to_string(daemon)) &&
                Has(next.err, "of an earlier run died during a ") &&
                Has(next.err, " ms hang; added to " + report + "\n"))
        << next.err;
  }
}

TEST(RunDaemon, RedisServerDaemonizedIsWatched) {
  ASSERT_TRUE(Exists(kRedisServer) && Exists(kRedisCli))
      << "redis-server and redis-cli are needed (scripts/bootstrap.sh installs them)";
  TempDir dir;
  const std::string sock = dir / "redis.sock", report = dir / "hangs.jsonl";
  KillAtEnd guard;
  // --daemonize yes: redis forks, the child calls setsid and runs the server; the parent exits
  // at once, before the server reaches its event loop.
  const auto r = RunCommand({kCli,
                             "run",
                             "--threshold-ms",
                             "100",
                             "--fail-on-hang",
                             "--report",
                             report,
                             "--",
                             kRedisServer,
                             "--daemonize",
                             "yes",
                             "--port",
                             "0",
                             "--unixsocket",
                             sock,
                             "--dir",
                             dir.path(),
                             "--pidfile",
                             dir / "redis.pid",
                             "--logfile",
                             dir / "redis.log",
                             "--save",
                             "",
                             "--appendonly",
                             "no",
                             "--enable-debug-command",
                             "local"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("pid ([0-9]+) redis-server \\(watched\\)")))
      << r.err;
  const int64_t daemon = std::stoll(m.str(1));
  guard.Set(daemon);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: still running after")) << r.err;
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("hangwatch run:   pid " + std::to_string(daemon) +
                                          " redis-server \\([^)]*\\): no hangs, still running\n")))
      << r.err;
  const std::string run_dir = KeptRunDir(r.err);
  ASSERT_FALSE(run_dir.empty()) << r.err;

  ASSERT_TRUE(WaitFor([&] {
    return RunCommand({kRedisCli, "-s", sock, "PING"}).out == "PONG\n";
  })) << ReadFile(dir / "redis.log");
  ASSERT_TRUE(WaitFor([&] { return Exists(dir / "redis.pid"); }));
  EXPECT_EQ(std::stoll(ReadFile(dir / "redis.pid")), daemon);

  const auto sleep = RunCommand({kRedisCli, "-s", sock, "DEBUG", "SLEEP", "0.5"});
  EXPECT_EQ(sleep.out, "OK\n") << sleep.err;
  ASSERT_TRUE(WaitFor([&] { return !ReadHangs(report).hangs.empty(); })) << ReadFile(report);
  const tools::Report hangs = ReadHangs(report);
  ASSERT_EQ(hangs.hangs.size(), 1u);
  const HangRecord& hang = hangs.hangs[0];
  EXPECT_EQ(hang.pid, daemon);
  EXPECT_GE(hang.duration_ms, 400u);
  bool debug_command = false;
  for (const Stack& s : hang.stacks) {
    for (const Frame& f : s.frames) debug_command |= f.symbol == "debugCommand";
  }
  EXPECT_TRUE(debug_command) << "the stalled command's frame is in the stacks";

  // Shut down: the daemon's directory goes with the next run.
  RunCommand({kRedisCli, "-s", sock, "SHUTDOWN", "NOSAVE"});
  ASSERT_TRUE(WaitFor([&] { return Gone(daemon, guard.start_time(), run_dir); }));
  const auto next = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(Exists(run_dir)) << run_dir << " should have been cleaned up";
}

TEST(RunDaemon, BackgroundProcessThatNeverWaitsIsNamedAndNotWatched) {
  TempDir dir;
  KillAtEnd guard;
  // sh starts sleep in the background and exits: sleep loaded the shim (sh passed it on) and
  // lives on, without an event loop. `run` gives it the start-up time, then says so.
  const auto started = std::chrono::steady_clock::now();
  const auto r = RunCommand({kCli, "run", "--startup-ms", "300", "--fail-on-hang", "--", "/bin/sh",
                             "-c", "sleep 120 & echo $! > '" + dir / "pid" + "'"});
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(Exists(dir / "pid")) << r.err;
  const int64_t sleeper = std::stoll(ReadFile(dir / "pid"));
  guard.Set(sleeper);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(Has(r.err,
                  "hangwatch run: no process was watched: sh never waited for events; 1 "
                  "other process loaded the shim (pid " +
                      std::to_string(sleeper) + " sleep still running)"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "pid " + std::to_string(sleeper) + " sleep (not waiting for events yet)"))
      << r.err;
  EXPECT_GE(took, std::chrono::milliseconds(300)) << "it was given the start-up time";
  const std::string run_dir = KeptRunDir(r.err);
  ASSERT_FALSE(run_dir.empty()) << r.err;
  kill(static_cast<pid_t>(sleeper), SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return Gone(sleeper, guard.start_time(), run_dir); }));
  const auto next = RunCommand({kCli, "run", "--", STALL_PROGRAM, "0", "0"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_FALSE(Exists(run_dir));
}

}  // namespace
}  // namespace hangwatch::testing
