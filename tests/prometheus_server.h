// A real Prometheus for the tests (Debian's `prometheus`): started with its own data directory,
// a free port and a 1 s scrape interval on the targets given, queried through its HTTP API, and
// killed and reaped at the end. Used by the exporter's test (tests/tools/exporter/) and the
// in-process registry's (tests/integrations/prometheus_registry_test.cc).
#ifndef HANGWATCH_TESTS_PROMETHEUS_SERVER_H_
#define HANGWATCH_TESTS_PROMETHEUS_SERVER_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/loopback_http.h"

namespace hangwatch::testing {

inline constexpr char kPrometheus[] = "/usr/bin/prometheus";

inline int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// The body of GET path from 127.0.0.1:port (HTTP/1.0: the server closes when done); nullopt
// when nothing answers or the status is not 200.
inline std::optional<std::string> HttpGet(int port, const std::string& path) {
  const std::string response = LoopbackGet(port, path);
  const size_t body = response.find("\r\n\r\n");
  if (response.compare(0, 12, "HTTP/1.0 200") != 0 && response.compare(0, 12, "HTTP/1.1 200") != 0)
    return std::nullopt;
  return body == std::string::npos ? "" : response.substr(body + 4);
}

inline std::string UrlEncode(const std::string& s) {
  std::string out;
  char hex[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// A program started by the test, killed and reaped at the end.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
  }
  ~Child() { Stop(SIGKILL); }
  // Sends `sig` and reaps it: its exit status (128 + N when killed by signal N).
  int Stop(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
};

// Waits up to a minute for `ready`, polling every 100 ms.
inline bool WaitFor(const std::function<bool()>& ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    poll(nullptr, 0, 100);
  }
  return ready();
}

// Prometheus scraping `targets` ("127.0.0.1:PORT") every second, with `rule_files` loaded.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, const std::vector<std::string>& targets,
                   const std::vector<std::string>& rule_files = {})
      : port_(FreePort()), log_(dir + "/prometheus.log") {
    std::string yml = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n";
    if (!rule_files.empty()) {
      yml += "rule_files:\n";
      for (const auto& f : rule_files) yml += "  - '" + f + "'\n";
    }
    yml += "scrape_configs:\n  - job_name: hangwatch\n    static_configs:\n      - targets: [";
    for (size_t i = 0; i < targets.size(); ++i) yml += (i ? ", '" : "'") + targets[i] + "'";
    yml += "]\n";
    std::ofstream(dir + "/prometheus.yml") << yml;
    child_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheus, "--config.file=" + dir + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir + "/prometheus-data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        log_);
  }

  // One instant query: the single sample's value; nullopt when the result is not one sample.
  std::optional<double> Query(const std::string& expr) const {
    const auto body = HttpGet(port_, "/api/v1/query?query=" + UrlEncode(expr));
    if (!body) return std::nullopt;
    const auto j = nlohmann::json::parse(*body, nullptr, false);
    if (!j.is_object() || j.value("status", "") != "success") return std::nullopt;
    const auto& result = j["data"]["result"];
    if (!result.is_array() || result.size() != 1) return std::nullopt;
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // Its output, for failure messages.
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  int port_;
  std::string log_;
  std::unique_ptr<Child> child_;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_PROMETHEUS_SERVER_H_
