// The resolvers of cause/ against real servers started here (real_component):
//   - a Python server (/usr/bin/python3.11) on a Unix socket, and one on loopback TCP, each
//     answering after a second: this process blocked in read / poll on its socket names the
//     server's pid;
//   - psycopg2 running SELECT pg_sleep(1) against a real PostgreSQL 15 (started here on a Unix
//     socket in a temporary directory): the client's poll names the postgres backend's pid;
//   - a FUSE file system (cause_slow_fuse) whose read sleeps 800 ms: a read blocked there is on
//     a regular file with its path, and its kernel wait is in FUSE.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "../integrations/child_process.h"
#include "blocked_thread.h"
#include "cause/fd_peer.h"
#include "cause/kernel_wait.h"
#include "cause/wait_fds.h"
#include "slow_servers.h"
#include "tests/postgres_server.h"

namespace hangwatch::cause {
namespace {

using ::hangwatch::testing::ChildProcess;
using ::hangwatch::testing::ReadFile;
using ::hangwatch::testing::TempDir;

using testing::kPython311;
constexpr const char* kPython = kPython311;

template <typename T>
std::string Summary(const T& x) {
  char buf[1024];
  FormatSummary(x, buf, sizeof buf);
  return buf;
}

class SlowServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  }
  // Starts the server; its pid, and the port or path it printed.
  std::string Start(const std::string& where) {
    return testing::StartSlowPythonServer(where, &server_);
  }
  // A thread that sends a request on `fd` and waits for the answer with `wait`; returns once
  // it sleeps in one of `nrs`, with its system call.
  unwind::TaskSyscall AskAndBlock(int fd, bool use_poll, std::initializer_list<long> nrs) {
    std::atomic<pid_t> tid{0};
    client_ = std::thread([&tid, fd, use_poll] {
      tid = testing::CurrentTid();
      (void)!write(fd, "q", 1);
      if (use_poll) {
        pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 30'000);
      }
      char buf[16];
      (void)!read(fd, buf, sizeof buf);
    });
    while (tid == 0) std::this_thread::yield();
    unwind::TaskSyscall call;
    EXPECT_TRUE(testing::WaitForSyscall(0, tid, nrs, &call));
    // The server took the request and sleeps on it: the connection is accepted.
    unwind::TaskSyscall server_call;
    EXPECT_TRUE(testing::WaitForSyscall(server_->pid(), server_->pid(),
                                        {SYS_clock_nanosleep, SYS_nanosleep}, &server_call));
    return call;
  }
  void TearDown() override {
    if (client_.joinable()) client_.join();
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> server_;
  std::thread client_;
  ScanBudget budget_;
  std::unique_ptr<WaitFdsScratch> scratch_ = std::make_unique<WaitFdsScratch>();
};

TEST_F(SlowServerTest, UnixSocketReadNamesThePythonServer) {
  const std::string path = dir_.path() + "/slow.sock";
  ASSERT_EQ(Start(path), path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const unwind::TaskSyscall call = AskAndBlock(fd, false, {SYS_read});
  ASSERT_EQ(static_cast<int>(call.args[0]), fd);
  FdDescription d;
  ASSERT_TRUE(DescribeFd(0, fd, budget_, &scratch_->peer, &d)) << Summary(d);
  EXPECT_EQ(d.kind, FdKind::kUnixSocket);
  EXPECT_EQ(d.socket_path, path);
  ASSERT_EQ(d.peers.count, 1) << Summary(d);
  EXPECT_EQ(d.peers.peers[0].pid, server_->pid()) << Summary(d);
  EXPECT_NE(Summary(d).find("unix socket " + path + ", peer " + std::to_string(server_->pid())),
            std::string::npos)
      << Summary(d);
  client_.join();
  close(fd);
}

TEST_F(SlowServerTest, TcpPollNamesThePythonServer) {
  const int port = std::atoi(Start("tcp").c_str());
  ASSERT_GT(port, 0);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const unwind::TaskSyscall call = AskAndBlock(fd, true, {SYS_poll, SYS_ppoll});
  WaitFds w;
  ASSERT_TRUE(DescribeWaitFds(0, call, budget_, scratch_.get(), &w)) << Summary(w);
  ASSERT_EQ(w.count, 1u) << Summary(w);
  const FdDescription& d = w.described[0];
  EXPECT_EQ(d.kind, FdKind::kTcp);
  EXPECT_TRUE(d.loopback);
  EXPECT_EQ(d.remote.port, port);
  ASSERT_EQ(d.peers.count, 1) << Summary(w);
  EXPECT_EQ(d.peers.peers[0].pid, server_->pid()) << Summary(w);
  EXPECT_FALSE(d.peer_is_listener) << Summary(w);  // accepted before the request was read
  EXPECT_NE(Summary(w).find("-> 127.0.0.1:" + std::to_string(port) + ", peer " +
                            std::to_string(server_->pid())),
            std::string::npos)
      << Summary(w);
  client_.join();
  close(fd);
}

// ---- PostgreSQL (the server: postgres_server.h) ----

constexpr char kPsycopgClient[] = R"(
import sys, psycopg2
conn = psycopg2.connect(host=sys.argv[1], user='postgres', dbname='postgres')
cur = conn.cursor()
cur.execute('select pg_backend_pid()')
print(cur.fetchone()[0], conn.fileno(), flush=True)
cur.execute('select pg_sleep(1)')
print('done', flush=True)
)";

using ::hangwatch::testing::PostgresServerTest;

TEST_F(PostgresServerTest, Psycopg2WaitingForPgSleepNamesTheBackend) {
  ChildProcess client({kPython, "-c", kPsycopgClient, dir_.path()}, {});
  std::string line;
  ASSERT_TRUE(client.ReadLine(&line, std::chrono::seconds(30)));
  int backend = 0, fd = -1;
  ASSERT_EQ(std::sscanf(line.c_str(), "%d %d", &backend, &fd), 2) << line;
  // libpq waits for the answer in poll() on its socket (the main thread: tid == pid).
  unwind::TaskSyscall call;
  ASSERT_TRUE(testing::WaitForSyscall(client.pid(), client.pid(), {SYS_poll, SYS_ppoll}, &call));
  auto scratch = std::make_unique<WaitFdsScratch>();
  WaitFds w;
  ASSERT_TRUE(DescribeWaitFds(client.pid(), call, ScanBudget{}, scratch.get(), &w)) << Summary(w);
  ASSERT_EQ(w.count, 1u) << Summary(w);
  const FdDescription& d = w.described[0];
  EXPECT_EQ(d.fd, fd);
  EXPECT_EQ(d.kind, FdKind::kUnixSocket) << Summary(w);
  EXPECT_EQ(std::string(d.socket_path), dir_.path() + "/.s.PGSQL.5432");
  ASSERT_EQ(d.peers.count, 1) << Summary(w);
  EXPECT_EQ(d.peers.peers[0].pid, backend) << Summary(w);
  EXPECT_STREQ(d.peers.peers[0].name, "postgres");
  ASSERT_TRUE(client.ReadLine(&line, std::chrono::seconds(30)));
  EXPECT_EQ(line, "done");
  EXPECT_EQ(client.Wait(), 0);
}

// ---- FUSE ----

TEST(FuseIo, ReadBlockedInASlowFuseFileIsOnItsPathAndWaitsInFuse) {
#ifndef HANGWATCH_SLOW_FUSE
  GTEST_SKIP() << "libfuse3-dev was not found when configuring: cause_slow_fuse was not built";
#else
  TempDir dir;
  std::unique_ptr<ChildProcess> server;
  std::string why_not;
  const std::string mnt =
      testing::MountSlowFuse(HANGWATCH_SLOW_FUSE, dir.path(), &server, &why_not);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  ASSERT_FALSE(mnt.empty());
  const std::string file = mnt + "/slow.txt";
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    tid = testing::CurrentTid();
    char buf[64];
    (void)!read(fd, buf, sizeof buf);
  });
  while (tid == 0) std::this_thread::yield();
  unwind::TaskSyscall call;
  ASSERT_TRUE(testing::WaitForSyscall(0, tid, {SYS_read}, &call));
  auto scratch = std::make_unique<FdPeerScratch>();
  FdDescription d;
  ASSERT_TRUE(DescribeFd(0, static_cast<int>(call.args[0]), ScanBudget{}, scratch.get(), &d));
  KernelWait k;
  ASSERT_TRUE(ReadKernelWait(0, tid, &k));
  reader.join();
  close(fd);
  umount2(mnt.c_str(), MNT_DETACH);
  server->WaitAtMost(std::chrono::seconds(10));

  EXPECT_EQ(d.kind, FdKind::kRegular) << Summary(d);
  EXPECT_EQ(d.path, file);
  EXPECT_NE(std::string(k.wchan), "") << Summary(k);
  if (k.stack_readable) {
    EXPECT_NE(std::string(k.stack).find("fuse"), std::string::npos) << Summary(k);
  }
  std::printf("kernel wait: %s\n", Summary(k).c_str());
#endif
}

}  // namespace
}  // namespace hangwatch::cause
