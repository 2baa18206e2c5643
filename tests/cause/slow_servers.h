// The slow other sides the cause tests wait for, started by the tests: a Python server on a
// Unix socket or loopback TCP that answers each request after a second (Debian's python3.11),
// and a FUSE file system whose reads sleep 800 ms (cause_slow_fuse, built when libfuse3-dev is
// there). Shared by tests/cause/ and tests/agent/.
#ifndef HANGWATCH_TESTS_CAUSE_SLOW_SERVERS_H_
#define HANGWATCH_TESTS_CAUSE_SLOW_SERVERS_H_

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/integrations/child_process.h"

namespace hangwatch::testing {

inline constexpr char kPython311[] = "/usr/bin/python3.11";

// Listens on a Unix socket (argv[1] a path) or loopback TCP (argv[1] "tcp"), prints "ready"
// and where (the path or the port), answers each request after a second.
inline constexpr char kSlowPythonServer[] = R"(
import socket, sys, time
if sys.argv[1] == 'tcp':
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(('127.0.0.1', 0))
    where = s.getsockname()[1]
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sys.argv[1])
    where = sys.argv[1]
s.listen(4)
print('ready', where, flush=True)
while True:
    c, _ = s.accept()
    c.recv(64)
    time.sleep(1)
    c.sendall(b'answer')
    c.close()
)";

// Starts the slow server on `where` (a socket path, or "tcp") into *server; returns the path or
// the port it printed ("" when it did not start: a test failure is recorded).
inline std::string StartSlowPythonServer(const std::string& where,
                                         std::unique_ptr<ChildProcess>* server) {
  *server = std::make_unique<ChildProcess>(
      std::vector<std::string>{kPython311, "-c", kSlowPythonServer, where},
      std::vector<std::string>{});
  std::string line;
  EXPECT_TRUE((*server)->ReadLine(&line, std::chrono::seconds(30)));
  EXPECT_EQ(line.rfind("ready ", 0), 0u) << line;
  return line.size() > 6 ? line.substr(6) : "";
}

// Mounts the slow FUSE file system (program `slow_fuse`) on `dir`/mnt, run by *server. Returns
// the mount point, or "" with *why_not when FUSE cannot be used here (the caller skips with
// it); a server that fails otherwise is a test failure.
inline std::string MountSlowFuse(const char* slow_fuse, const std::string& dir,
                                 std::unique_ptr<ChildProcess>* server, std::string* why_not) {
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    *why_not = std::string("/dev/fuse cannot be used: ") + std::strerror(errno);
    return "";
  }
  const std::string mnt = dir + "/mnt";
  EXPECT_EQ(mkdir(mnt.c_str(), 0755), 0);
  *server = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" \"$1\" 2>&1", slow_fuse, mnt},
      std::vector<std::string>{});
  std::string line;
  const bool mounted = (*server)->ReadLine(&line, std::chrono::seconds(20)) && line == "mounted";
  if (!mounted && (line.find("ermission") != std::string::npos ||
                   line.find("not permitted") != std::string::npos)) {
    *why_not = "FUSE cannot mount here: " + line;
    return "";
  }
  EXPECT_TRUE(mounted) << line;
  return mounted ? mnt : "";
}

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_CAUSE_SLOW_SERVERS_H_
