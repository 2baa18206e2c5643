// `hangwatch run` on real programs as they shut down (Debian's packages; real_component):
//   - gunicorn's master, stopped by SIGTERM, reported its own graceful shutdown as a ~270 ms
//     hang in 3 to 4 runs of 8, failing --fail-on-hang: a pass the process's exit ends is a
//     shutdown-phase hang, judged only with --judge-shutdown;
//   - Xvfb, stopped by xvfb-run with SIGTERM, left a 726 KB open-hang file in a run directory
//     kept for it: outside a hang the file holds nothing, and nothing is left once it exited;
//   - a Swing program under xvfb-run passed --fail-on-hang with only Xvfb watched (listed
//     "still running", its run directory kept): java, whose status xvfb-run returns, is the
//     program; it was not watched (its main thread waits in pthread_join while the JVM runs
//     main() on another thread), which is exit 4 and the summary's first line, and Xvfb, which
//     xvfb-run stops as it exits, is a helper that has ended.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "cli_util.h"
#include "tools/reader/report_reader.h"
#include "tools/run/launch_log_reader.h"
#include "tools/run/run_dir.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kGunicorn[] = "/usr/bin/gunicorn";
constexpr char kCurl[] = "/usr/bin/curl";
constexpr char kXvfbRun[] = "/usr/bin/xvfb-run";
constexpr char kXvfb[] = "/usr/bin/Xvfb";
constexpr char kJava[] = "/usr/bin/java";
constexpr char kJavac[] = "/usr/bin/javac";

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

// A TCP port nobody listens on now (the kernel's pick for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

tools::Report ReadReport(const std::string& path) {
  tools::Report report;
  std::string error;
  EXPECT_TRUE(tools::ReadReportFile(path, &report, &error)) << error;
  return report;
}

// Kills a process the test started if it is still alive when the test ends.
class KillAtEnd {
 public:
  void Set(int64_t pid) {
    pid_ = pid;
    start_ = tools::ReadProcStat(pid).start_time;
  }
  uint64_t start_time() const { return start_; }
  ~KillAtEnd() {
    if (pid_ > 0 && tools::IsAlive(pid_, start_)) kill(static_cast<pid_t>(pid_), SIGKILL);
  }

 private:
  int64_t pid_ = 0;
  uint64_t start_ = 0;
};

// A one-worker gunicorn serving a tiny WSGI app from `dir`, one request, then SIGTERM to the
// master and its exit status; the master's pid in DIR/master.pid (gunicorn removes its own
// pid file when it exits). `config`: a gunicorn
// configuration file, or "".
std::string GunicornDriver(const TempDir& dir, int port, const std::string& config) {
  WriteFile(dir / "app.py",
            "def app(environ, start_response):\n"
            "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
            "    return [b'ok\\n']\n");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  std::string script = "#!/bin/sh\n";
  script += "gunicorn " + (config.empty() ? std::string() : "-c " + config + " ") +
            "--workers 1 --bind 127.0.0.1:" + std::to_string(port) + " --chdir " + dir.path() +
            " app:app 2>" + (dir / "gunicorn.log") + " &\n";
  script += "P=$!\necho $P > " + (dir / "master.pid") + "\n";
  // Until the port answers (30 s at most), then the request whose answer the test reads.
  script += "i=0\nuntil " + std::string(kCurl) + " -sf -o " + (dir / "answer") + " " + url +
            "; do i=$((i+1)); [ $i -gt 300 ] && { kill -KILL $P; exit 9; }; sleep 0.1; done\n";
  // gunicorn's master sleeps up to 0.1 s after forking its worker before it first waits for
  // events (and arms): the worker may answer before. Stopped then, the master is not watched at
  // all; so the driver waits (10 s at most) for its "armed" line in the launch log.
  script += "i=0\nuntil grep -q \"^armed $P \" \"$HANGWATCH_OPEN_HANG_DIR/" +
            std::string(tools::kLaunchLogFile) +
            "\"; do i=$((i+1)); [ $i -gt 500 ] && break; sleep 0.02; done\n";
  script += "kill -TERM $P\nwait $P\n";
  WriteFile(dir / "drive.sh", script);
  chmod((dir / "drive.sh").c_str(), 0700);
  return dir / "drive.sh";
}

int64_t MasterPid(const TempDir& dir) { return std::atoll(ReadFile(dir / "master.pid").c_str()); }

// The rule, on whatever hangs happened: every hang of the master (its graceful shutdown) is
// a shutdown-phase one, and `run` fails (3) exactly when a judged hang happened.
void ExpectPhaseRule(const CommandResult& run, const tools::Report& report, int64_t master,
                     bool judge_shutdown) {
  bool judged = false;
  for (const HangRecord& h : report.hangs) {
    if (h.pid == master) {
      EXPECT_EQ(h.phase, HangPhase::kShutdown) << "the master's hang: " << h.duration_ms << " ms";
    }
    judged |= judge_shutdown || h.phase != HangPhase::kShutdown;
  }
  EXPECT_EQ(run.exit_code, judged ? 3 : 0) << run.err;
}

TEST(RunExit, GunicornMastersGracefulShutdownIsAShutdownPhaseHang) {
  if (!Exists(kGunicorn) || !Exists(kCurl)) GTEST_SKIP() << "needs Debian's gunicorn and curl";
  TempDir dir;
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string driver = GunicornDriver(dir, port, "");
  const std::string report = dir / "r.jsonl";
  const auto run = RunCommand({kCli, "run", "--fail-on-hang", "--report", report, "--", driver});
  EXPECT_EQ(ReadFile(dir / "answer"), "ok\n") << run.err << ReadFile(dir / "gunicorn.log");
  const int64_t master = MasterPid(dir);
  ASSERT_GT(master, 0);
  ExpectPhaseRule(run, ReadReport(report), master, /*judge_shutdown=*/false);
}

// A worker that takes 0.5 s to exit (gunicorn's worker_exit hook) makes the master's graceful
// shutdown a hang every time: not judged by default, judged with --judge-shutdown.
TEST(RunExit, GunicornSlowWorkerExitFailsOnlyWithJudgeShutdown) {
  if (!Exists(kGunicorn) || !Exists(kCurl)) GTEST_SKIP() << "needs Debian's gunicorn and curl";
  for (const bool judge : {false, true}) {
    SCOPED_TRACE(judge ? "--judge-shutdown" : "default");
    TempDir dir;
    WriteFile(dir / "conf.py",
              "import time\n"
              "def worker_exit(server, worker):\n"
              "    time.sleep(0.5)\n");
    const int port = FreePort();
    ASSERT_GT(port, 0);
    const std::string driver = GunicornDriver(dir, port, dir / "conf.py");
    const std::string report = dir / "r.jsonl";
    std::vector<std::string> argv = {kCli, "run", "--fail-on-hang", "--report", report};
    if (judge) argv.push_back("--judge-shutdown");
    argv.insert(argv.end(), {"--", driver});
    const auto run = RunCommand(argv);
    EXPECT_EQ(ReadFile(dir / "answer"), "ok\n") << run.err << ReadFile(dir / "gunicorn.log");
    const int64_t master = MasterPid(dir);
    ASSERT_GT(master, 0);
    const tools::Report r = ReadReport(report);
    bool master_hang = false;
    for (const HangRecord& h : r.hangs) {
      if (h.pid != master) continue;
      master_hang = true;
      EXPECT_GE(h.duration_ms, 500u) << "it waits for the worker's 0.5 s exit";
    }
    EXPECT_TRUE(master_hang) << ReadFile(report) << run.err;
    ExpectPhaseRule(run, r, master, judge);
    EXPECT_EQ(run.exit_code, judge ? 3 : 0) << run.err;
    if (!judge) {
      EXPECT_TRUE(Has(run.err, "in the shutdown phase")) << run.err;
    }
  }
}

// The run directory `run` said it keeps, "" when none.
std::string KeptRunDir(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex("(/tmp/hangwatch-run\\.[A-Za-z0-9]{6}) is kept"))
             ? m.str(1)
             : "";
}

TEST(RunExit, XvfbStoppedByXvfbRunLeavesNoOpenHangFile) {
  if (!Exists(kXvfbRun) || !Exists(kXvfb)) GTEST_SKIP() << "needs Debian's xvfb (xvfb-run)";
  TempDir dir;
  // The command xvfb-run runs, once Xvfb is ready: waits until Xvfb has armed (its open-hang
  // file exists), notes the file's size while Xvfb idles, and returns; xvfb-run then stops
  // Xvfb with SIGTERM.
  const std::string sizes = dir / "sizes";
  WriteFile(dir / "check.sh",
            "#!/bin/sh\n"
            "i=0\n"
            "until ls \"$HANGWATCH_OPEN_HANG_DIR\"/open-hang.* >/dev/null 2>&1; do\n"
            "  i=$((i+1)); [ $i -gt 1500 ] && exit 9; sleep 0.02\n"
            "done\n"
            "stat -c %s \"$HANGWATCH_OPEN_HANG_DIR\"/open-hang.* > " +
                sizes + "\n");
  chmod((dir / "check.sh").c_str(), 0700);
  const auto run = RunCommand({kCli, "run", "--", kXvfbRun, "-a", dir / "check.sh"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Every process that armed has one (the shim is passed on: xvfb-run's own helpers may arm
  // too); each holds nothing while its process idles.
  const std::string listed = ReadFile(sizes);
  EXPECT_FALSE(listed.empty()) << "no open-hang file was listed";
  for (size_t at = 0; at < listed.size();) {
    const size_t end = listed.find('\n', at);
    EXPECT_EQ(listed.substr(at, end - at), "0") << "an idle process's open-hang file holds data";
    if (end == std::string::npos) break;
    at = end + 1;
  }

  // Xvfb may still be shutting down when xvfb-run returns: `run` then keeps its directory.
  std::string run_dir = KeptRunDir(run.err);
  if (run_dir.empty()) return;  // it had exited: the directory went with `run`
  const tools::LaunchLog log = tools::ReadLaunchLog(run_dir + "/" + tools::kLaunchLogFile);
  for (const auto& p : log.processes) {
    KillAtEnd guard;
    guard.Set(p.pid);
    EXPECT_TRUE(WaitFor([&] { return !tools::IsAlive(p.pid, p.start_time); }))
        << "pid " << p.pid << " " << p.Last().name;
  }
  std::string left;
  if (DIR* d = opendir(run_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "open-hang.", 10) == 0) left += std::string(e->d_name) + " ";
    }
    closedir(d);
  }
  EXPECT_EQ(left, "") << "Xvfb exited outside a hang: nothing of it is left";
  tools::RemoveRunDir(run_dir);  // what the next run would do
}

TEST(RunExit, SwingProgramUnderXvfbRunIsTheProgramNotXvfb) {
  if (!Exists(kXvfbRun) || !Exists(kXvfb) || !Exists(kJava) || !Exists(kJavac)) {
    GTEST_SKIP() << "needs Debian's xvfb and openjdk-17-jdk";
  }
  TempDir dir;
  // A window, then 1.5 s of work on Swing's event thread, then exit.
  WriteFile(dir / "SwingApp.java",
            "import javax.swing.*;\n"
            "public class SwingApp {\n"
            "  public static void main(String[] args) throws Exception {\n"
            "    SwingUtilities.invokeAndWait(() -> {\n"
            "      JFrame f = new JFrame(\"app\");\n"
            "      f.setSize(100, 100);\n"
            "      f.setVisible(true);\n"
            "    });\n"
            "    SwingUtilities.invokeAndWait(() -> {\n"
            "      try { Thread.sleep(1500); } catch (InterruptedException e) {}\n"
            "    });\n"
            "    System.exit(0);\n"
            "  }\n"
            "}\n");
  WriteFile(dir / "Quick.java",
            "public class Quick { public static void main(String[] args) {} }\n");
  const auto javac =
      RunCommand({kJavac, "-d", dir.path(), dir / "SwingApp.java", dir / "Quick.java"});
  ASSERT_EQ(javac.exit_code, 0) << javac.err;
  const auto run = RunCommand(
      {kCli, "run", "--fail-on-hang", "--", kXvfbRun, "-a", "java", "-cp", dir.path(), "SwingApp"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  // The first line names the program and the real reason.
  EXPECT_EQ(run.err.rfind("hangwatch run: the program was not watched: java (run by xvfb-run) "
                          "never waited for events: its main thread waited in pthread_join",
                          0),
            0u)
      << run.err;
  EXPECT_TRUE(Has(run.err, "watch them with --threads loops")) << run.err;
  // Xvfb is still listed, as a helper that ended with xvfb-run.
  EXPECT_TRUE(std::regex_search(
      run.err, std::regex("pid [0-9]+ Xvfb \\(/usr/bin/Xvfb\\): no hangs, a helper, not the "
                          "program\n")))
      << run.err;
  EXPECT_FALSE(Has(run.err, "still running")) << run.err;
  EXPECT_EQ(KeptRunDir(run.err), "") << run.err;

  // java alone: nothing was watched, for the same reason.
  const auto alone =
      RunCommand({kCli, "run", "--fail-on-hang", "--", kJava, "-cp", dir.path(), "Quick"});
  EXPECT_EQ(alone.exit_code, 4) << alone.err;
  EXPECT_TRUE(Has(alone.err,
                  "hangwatch run: no process was watched: java never waited for "
                  "events: its main thread waited in pthread_join"))
      << alone.err;
}

}  // namespace
}  // namespace hangwatch::testing
