// Debian's gunicorn on python3.11 for the real-program tests (real_component): a WSGI app from
// the test's directory, served on a unix socket there, requests sent and answers read by the
// test, stopped gracefully with SIGTERM. Started under the preload shim (stripped_identity_test:
// the shim's environment) or under `hangwatch run` (run_python_apps_test: its command line as
// the launcher, which passes SIGTERM on to gunicorn's master). Header-only, over
// tests/integrations/child_process.h.
#ifndef HANGWATCH_TESTS_TOOLS_GUNICORN_SERVER_H_
#define HANGWATCH_TESTS_TOOLS_GUNICORN_SERVER_H_

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integrations/child_process.h"

namespace hangwatch::testing {

inline constexpr char kGunicorn[] = "/usr/bin/gunicorn";
inline constexpr char kGunicornPython[] = "/usr/bin/python3.11";

// Sends "GET `target`" (e.g. "/a", "/?0.8") to the unix socket `path` without waiting for the
// answer; the socket, or -1 when the server does not answer within 20 s.
inline int SendRequest(const std::string& path, const std::string& target) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const std::string req = "GET " + target + " HTTP/1.0\r\n\r\n";
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      return fd;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// The answer on `fd` (read to its end), then closes it.
inline std::string ReadAnswer(int fd) {
  std::string answer;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
  close(fd);
  return answer;
}

// Whether the agent runs in `pid` (its watchdog thread, named "hangwatch", is there), waiting
// up to 20 s.
inline bool Armed(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  while (std::chrono::steady_clock::now() < deadline) {
    if (DIR* d = opendir(tasks.c_str())) {
      bool found = false;
      while (dirent* e = readdir(d)) {
        std::ifstream comm(tasks + "/" + e->d_name + "/comm");
        std::string name;
        found |= std::getline(comm, name) && name == "hangwatch";
      }
      closedir(d);
      if (found) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class GunicornServer {
 public:
  // `launcher` + python3.11 gunicorn with `options` (sync workers: "--workers", "2", ...)
  // serving `app` ("module:name") from `dir`, on DIR/g.sock; `env` added to the environment.
  // The app's stdout is the test's to read (child.ReadLine).
  GunicornServer(const std::string& dir, std::vector<std::string> launcher,
                 const std::vector<std::string>& env, const std::vector<std::string>& options,
                 const std::string& app)
      : socket(dir + "/g.sock"), child(Command(dir, std::move(launcher), options, app), env) {}

  // A test that ended early stops it too: SIGKILL to `hangwatch run` would leave gunicorn
  // running.
  ~GunicornServer() {
    if (!stopped_) Stop();
  }
  GunicornServer(const GunicornServer&) = delete;
  GunicornServer& operator=(const GunicornServer&) = delete;

  // Graceful stop: SIGTERM (to the master, or to `hangwatch run`, which passes it on), then
  // the exit status within 30 s (-1: still running, then killed).
  int Stop() {
    stopped_ = true;
    kill(child.pid(), SIGTERM);
    return child.WaitAtMost(std::chrono::seconds(30));
  }

  std::string socket;
  ChildProcess child;

 private:
  bool stopped_ = false;
  static std::vector<std::string> Command(const std::string& dir, std::vector<std::string> argv,
                                          const std::vector<std::string>& options,
                                          const std::string& app) {
    argv.insert(argv.end(),
                {kGunicornPython, kGunicorn, "--bind", "unix:" + dir + "/g.sock", "--chdir", dir});
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(app);
    return argv;
  }
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_TOOLS_GUNICORN_SERVER_H_
