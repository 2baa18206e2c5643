// End to end on real servers (real_component): the main thread's request to a Python server
// (/usr/bin/python3.11) that answers after a second, on a Unix socket and on loopback TCP, is a
// hang of cause ipc naming the server's pid. The server is started here, killed and reaped at
// the end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/cause/slow_servers.h"
#include "tests/integrations/child_process.h"

namespace hangwatch {
namespace {

using ::hangwatch::testing::ChildProcess;
using ::hangwatch::testing::TempDir;

using testing::kPython311;
constexpr const char* kPython = kPython311;

class SlowServerCauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  }
  std::string StartServer(const std::string& where) {
    return testing::StartSlowPythonServer(where, &server_);
  }
  // Sends a request on `fd` inside a pass and waits for the answer (with poll first when
  // `use_poll`); the hang reported.
  HangRecord AskInAPass(int fd, bool use_poll) {
    EXPECT_TRUE(Start(testing::TestConfig()).ok());
    testing::HangCollector collector;
    BeginWork();
    EXPECT_EQ(write(fd, "q", 1), 1);
    if (use_poll) {
      pollfd p = {fd, POLLIN, 0};
      EXPECT_EQ(poll(&p, 1, 30'000), 1);
    }
    char buf[16];
    EXPECT_GT(read(fd, buf, sizeof buf), 0);
    EndWork();
    const bool reported = collector.WaitFor(1);
    Stop();
    EXPECT_TRUE(reported);
    return reported ? collector.hangs()[0] : HangRecord{};
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> server_;
};

TEST_F(SlowServerCauseTest, UnixSocketRequestNamesThePythonServer) {
  const std::string path = dir_.path() + "/slow.sock";
  ASSERT_EQ(StartServer(path), path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const HangRecord h = AskInAPass(fd, false);
  close(fd);
  ASSERT_EQ(h.cause.kind, CauseKind::kIpc) << h.cause.summary;
  EXPECT_EQ(h.cause.path, path);
  ASSERT_FALSE(h.cause.peers.empty()) << h.cause.summary;
  EXPECT_EQ(h.cause.peers[0].pid, server_->pid()) << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("waiting for process " + std::to_string(server_->pid())),
            std::string::npos)
      << h.cause.summary;
}

TEST_F(SlowServerCauseTest, TcpRequestWaitedInPollNamesThePythonServer) {
  const int port = std::atoi(StartServer("tcp").c_str());
  ASSERT_GT(port, 0);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const HangRecord h = AskInAPass(fd, true);
  close(fd);
  ASSERT_EQ(h.cause.kind, CauseKind::kIpc) << h.cause.summary;
  ASSERT_EQ(h.cause.fds.size(), 1u);
  EXPECT_EQ(h.cause.fds[0], fd);
  EXPECT_EQ(h.cause.remote_address, "127.0.0.1:" + std::to_string(port));
  ASSERT_FALSE(h.cause.peers.empty()) << h.cause.summary;
  EXPECT_EQ(h.cause.peers[0].pid, server_->pid()) << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("-> 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("poll("), std::string::npos) << h.cause.summary;
}

}  // namespace
}  // namespace hangwatch
