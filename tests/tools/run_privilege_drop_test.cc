// `hangwatch run --report` on Debian's nginx (master and two workers, `daemon off;`) as root:
// with the `user` directive of Debian's own configuration (www-data), with `user root;`, and
// with none (the workers then switch to nobody). The master sleeps in sigsuspend (never
// watched); each worker switches user before its event loop. Both workers are watched (the shim
// kept the report, the launch log and their open-hang files open from before the switch), a few
// requests and `nginx -s quit` make no hang, `run` exits with nginx's status, and each worker
// wrote its last lag record, with the passes that served the requests: nginx rebuilds a
// worker's environment before its loop, and the settings come from the environment as it was
// when the shim was loaded (integrations/preload/load_environment.h), labels included. Needs
// root (the switch) and nginx; real_component.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "tests/loopback_http.h"
#include "tools/reader/report_reader.h"
#include "tools/run/launch_log_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kNginx[] = "/usr/sbin/nginx";

bool WaitFor(const std::function<bool()>& done, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A local TCP port nobody listens on now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// The children of `pid` (nginx's workers), from /proc.
std::vector<int64_t> ChildrenOf(int64_t pid) {
  std::vector<int64_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const int64_t p = std::atoll(e->d_name);
    if (tools::ReadProcStat(p).ppid == pid) out.push_back(p);
  }
  closedir(d);
  return out;
}

// The effective user of `pid` (/proc/PID/status: its directory is root's once a process that
// switched user is no longer dumpable); -1 when unknown.
int64_t EffectiveUid(int64_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  return std::regex_search(status, m, std::regex(R"(\nUid:\s+[0-9]+\s+([0-9]+))"))
             ? std::atoll(m.str(1).c_str())
             : -1;
}

// Kills what is left of nginx when the test ends (a failed assertion leaves nothing behind).
struct KillAtEnd {
  std::vector<std::pair<int64_t, uint64_t>> procs;  // pid, start time
  void Add(int64_t pid) { procs.emplace_back(pid, tools::ReadProcStat(pid).start_time); }
  ~KillAtEnd() {
    for (const auto& [pid, start] : procs) {
      if (tools::IsAlive(pid, start)) kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
};

// The `user` line of the configuration, and the user the workers run as.
struct NginxUser {
  const char* directive;  // "" for none
  const char* name;
};

class RunPrivilegeDrop : public ::testing::TestWithParam<NginxUser> {};

TEST_P(RunPrivilegeDrop, NginxWorkersAreWatchedAndWriteTheirLagRecords) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: nginx's workers switch user only from root";
  if (access(kNginx, X_OK) != 0) {
    GTEST_SKIP() << "nginx is needed (scripts/bootstrap.sh installs it)";
  }
  const passwd* user = getpwnam(GetParam().name);
  if (user == nullptr) GTEST_SKIP() << "no " << GetParam().name << " user";
  const uid_t uid = user->pw_uid;
  TempDir dir;
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string d = dir.path();
  // Everything nginx writes in the temporary directory.
  std::string conf =
      std::string(GetParam().directive) + "master_process on;\nworker_processes 2;\ndaemon off;\n";
  conf += "pid " + d + "/nginx.pid;\nerror_log " + d + "/error.log;\n";
  conf += "events { worker_connections 64; }\nhttp {\n";
  conf += "  access_log " + d + "/access.log;\n";
  for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    conf += std::string("  ") + temp + "_temp_path " + d + "/" + temp + ";\n";
  }
  conf += "  server { listen 127.0.0.1:" + std::to_string(port) +
          "; location / { return 200 \"hello\\n\"; } }\n}\n";
  WriteFile(dir / "nginx.conf", conf);
  const std::string report_path = dir / "report.jsonl";

  CommandResult r;
  std::atomic<bool> finished{false};
  std::thread run([&] {
    r = RunCommand(
        {kCli, "run", "--report", report_path, "--", kNginx, "-p", d, "-c", dir / "nginx.conf"},
        {"HANGWATCH_LABELS=service=web"});
    finished = true;
  });
  KillAtEnd cleanup;
  int64_t master = 0;
  const bool up = WaitFor([&] {
    if (finished) return true;  // run ended early: said why below
    const std::string pid = ReadFile(dir / "nginx.pid");
    master = pid.empty() ? 0 : std::atoll(pid.c_str());
    if (master <= 0 || ChildrenOf(master).size() != 2 ||
        LoopbackGet(port, "/", std::chrono::seconds(10)).empty())
      return false;
    // One worker answering says nothing of the other: each switches user on its own, after the
    // fork (a worker read just before its switch is still root's).
    // Nor does it say the other reached its loop: a worker asleep in epoll_wait has armed (the
    // shim arms before the real call), so the stop below cannot come before that.
    for (int64_t w : ChildrenOf(master)) {
      if (EffectiveUid(w) != uid) return false;
      const std::string wchan = ReadFile("/proc/" + std::to_string(w) + "/wchan");
      if (wchan.find("epoll") == std::string::npos && wchan.find("ep_poll") == std::string::npos) {
        return false;  // do_epoll_wait, or ep_poll on older kernels
      }
    }
    return true;
  });
  if (master > 0) {
    cleanup.Add(master);
    for (int64_t w : ChildrenOf(master)) cleanup.Add(w);
  }
  if (!up || finished) {
    for (const auto& [pid, start] : cleanup.procs) kill(static_cast<pid_t>(pid), SIGKILL);
    run.join();
    FAIL() << "nginx did not answer on port " << port << "\n"
           << r.err << ReadFile(dir / "error.log");
  }
  const std::vector<int64_t> workers = ChildrenOf(master);
  for (int64_t w : workers) EXPECT_EQ(EffectiveUid(w), uid) << "worker " << w;
  for (int i = 0; i < 6; ++i)
    EXPECT_NE(LoopbackGet(port, "/", std::chrono::seconds(10)).find("hello"), std::string::npos);
  // `nginx -s quit` (with -p and -c: the pid file of this configuration), a graceful stop.
  const CommandResult quit = RunCommand({kNginx, "-p", d, "-c", dir / "nginx.conf", "-s", "quit"});
  EXPECT_EQ(quit.exit_code, 0) << quit.err;
  run.join();

  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "watched 2 processes")) << r.err << ReadFile(dir / "error.log");
  for (int64_t w : workers) {
    EXPECT_TRUE(std::regex_search(r.err, std::regex("pid " + std::to_string(w) + " .*: no hangs")))
        << "worker " << w << " not watched:\n"
        << r.err;
  }
  EXPECT_FALSE(Has(r.err, "never waited for events")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("no hangs in [^ ]*nginx"))) << r.err;

  // Each worker's last lag record: it served requests (the first Get above, in the wait, and
  // the six after, went to one worker or the other), so it had passes; every worker ran its
  // loop at least once (the listening socket and the master's channel are events too).
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  EXPECT_TRUE(report.hangs.empty()) << ReadFile(report_path);
  uint64_t passes = 0;
  for (int64_t w : workers) {
    uint64_t of_worker = 0;
    for (const auto& lag : report.lags) {
      if (lag.pid != w) continue;
      of_worker += lag.passes.passes();
      EXPECT_EQ(lag.labels.count("service") ? lag.labels.at("service") : "", "web")
          << "HANGWATCH_LABELS, as the worker's environment had it at start";
    }
    EXPECT_GT(of_worker, 0u) << "no lag record of worker " << w << ":\n" << ReadFile(report_path);
    passes += of_worker;
  }
  EXPECT_GE(passes, 7u) << "seven requests served\n" << ReadFile(report_path);
}

INSTANTIATE_TEST_SUITE_P(User, RunPrivilegeDrop,
                         ::testing::Values(NginxUser{"user www-data;\n", "www-data"},
                                           NginxUser{"user root;\n", "root"},
                                           NginxUser{"", "nobody"}),
                         [](const ::testing::TestParamInfo<NginxUser>& info) {
                           return std::string(info.param.directive[0] == '\0' ? "NoUserDirective"
                                              : info.param.name[0] == 'r'     ? "Root"
                                                                              : "WwwData");
                         });

}  // namespace
}  // namespace hangwatch::testing
