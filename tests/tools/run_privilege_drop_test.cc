// `hangwatch run` on Debian's nginx with the `user` directive of Debian's own configuration
// (www-data): the master runs as root and its two workers switch to www-data before their event
// loop. Both workers are watched (the shim kept the report, the launch log and their open-hang
// files open from before the switch), a request and `nginx -s quit` make no hang, and `run`
// exits with nginx's status. Needs root (the switch) and nginx; real_component.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
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

// One HTTP/1.0 GET on 127.0.0.1:port; the whole reply ("" when nothing answers).
std::string Get(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  const std::string request = "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[512];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
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

TEST(RunPrivilegeDrop, NginxWorkersThatSwitchToWwwDataAreWatched) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: nginx's workers switch user only from root";
  if (access(kNginx, X_OK) != 0) {
    GTEST_SKIP() << "nginx is needed (scripts/bootstrap.sh installs it)";
  }
  if (getpwnam("www-data") == nullptr) GTEST_SKIP() << "no www-data user (Debian's nginx user)";
  TempDir dir;
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string d = dir.path();
  // Debian's `user` directive; everything nginx writes in the temporary directory.
  std::string conf = "user www-data;\nworker_processes 2;\ndaemon off;\n";
  conf += "pid " + d + "/nginx.pid;\nerror_log " + d + "/error.log;\n";
  conf += "events { worker_connections 64; }\nhttp {\n";
  conf += "  access_log " + d + "/access.log;\n";
  for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    conf += std::string("  ") + temp + "_temp_path " + d + "/" + temp + ";\n";
  }
  conf += "  server { listen 127.0.0.1:" + std::to_string(port) +
          "; location / { return 200 \"hello\\n\"; } }\n}\n";
  WriteFile(dir / "nginx.conf", conf);

  CommandResult r;
  std::thread run([&] {
    r = RunCommand({kCli, "run", "--", kNginx, "-p", d, "-c", dir / "nginx.conf"});
  });
  KillAtEnd cleanup;
  int64_t master = 0;
  const bool up = WaitFor([&] {
    const std::string pid = ReadFile(dir / "nginx.pid");
    master = pid.empty() ? 0 : std::atoll(pid.c_str());
    if (master <= 0 || ChildrenOf(master).size() != 2 || Get(port).empty()) return false;
    // One worker answering says nothing of the other: each switches user on its own, after the
    // fork (a worker read just before its switch is still root's).
    // Nor does it say the other reached its loop: a worker asleep in epoll_wait has armed (the
    // shim arms before the real call), so the stop below cannot come before that.
    for (int64_t w : ChildrenOf(master)) {
      if (EffectiveUid(w) != getpwnam("www-data")->pw_uid) return false;
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
  if (!up) {
    for (const auto& [pid, start] : cleanup.procs) kill(static_cast<pid_t>(pid), SIGKILL);
    run.join();
    FAIL() << "nginx did not answer on port " << port << "\n"
           << r.err << ReadFile(dir / "error.log");
  }
  const std::vector<int64_t> workers = ChildrenOf(master);
  for (int64_t w : workers) {
    EXPECT_EQ(EffectiveUid(w), getpwnam("www-data")->pw_uid) << "worker " << w;
  }
  EXPECT_NE(Get(port).find("hello"), std::string::npos);
  // `nginx -s quit`: SIGQUIT to the master, a graceful stop.
  kill(static_cast<pid_t>(master), SIGQUIT);
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
}

}  // namespace
}  // namespace hangwatch::testing
