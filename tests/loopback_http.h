// The tests' HTTP client for servers they start on 127.0.0.1 (a Java, node, Python or nginx
// server under `hangwatch run` or the shim; the exporter; Prometheus): one request per
// connection, read until the server closes it. Header-only, POSIX sockets.
#ifndef HANGWATCH_TESTS_LOOPBACK_HTTP_H_
#define HANGWATCH_TESTS_LOOPBACK_HTTP_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace hangwatch::testing {

// Connects to 127.0.0.1:port, sends `request` (nothing when empty: a server that talks first),
// then reads until the server closes the connection or `quiet` passes without a byte. The
// whole reply; "" when nothing answers. Blocks while the server's handler runs: the point of
// the tests that use it. A server that closes early costs EPIPE, not SIGPIPE.
inline std::string LoopbackExchange(int port, const std::string& request,
                                    std::chrono::seconds quiet) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval tv{static_cast<time_t>(quiet.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      (request.empty() || send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                              static_cast<ssize_t>(request.size()))) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

// GET `target` ("/", "/slow?busy") over HTTP/1.0, so the server closes when it has answered.
inline std::string LoopbackGet(int port, const std::string& target,
                               std::chrono::seconds quiet = std::chrono::seconds(30)) {
  return LoopbackExchange(port, "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", quiet);
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_LOOPBACK_HTTP_H_
