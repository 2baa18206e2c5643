// DescribeFd against real peers: a pipe and a FIFO whose other end a child holds, a TCP
// connection to a child listening on loopback, a socketpair, a regular file; and bad input
// (closed descriptors, dead processes, a budget that cuts the scan).
#include "cause/fd_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "blocked_thread.h"
#include "peer_child.h"

namespace hangwatch::cause {
namespace {

using ::hangwatch::testing::PeerChild;

std::string Summary(const FdDescription& d) {
  char buf[512];
  FormatSummary(d, buf, sizeof buf);
  return buf;
}

class FdPeerTest : public ::testing::Test {
 protected:
  std::unique_ptr<FdPeerScratch> scratch_ = std::make_unique<FdPeerScratch>();
  ScanBudget budget_;
  FdDescription d_;
};

TEST_F(FdPeerTest, PipeNamesTheChildHoldingItsWriteEnd) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  PeerChild child("pipe-writer", [&] {
    close(p[0]);
    usleep(1'000'000);  // answers after a second
    (void)!write(p[1], "x", 1);
  });
  close(p[1]);
  // A thread blocked in read on the pipe, as the watchdog finds it.
  std::atomic<pid_t> reader_tid{0};
  std::thread reader([&] {
    reader_tid = testing::CurrentTid();
    char c;
    (void)!read(p[0], &c, 1);
  });
  while (reader_tid == 0) std::this_thread::yield();
  unwind::TaskSyscall call;
  ASSERT_TRUE(testing::WaitForSyscall(0, reader_tid, {SYS_read}, &call));
  ASSERT_EQ(static_cast<int>(call.args[0]), p[0]);
  ASSERT_TRUE(DescribeFd(0, static_cast<int>(call.args[0]), budget_, scratch_.get(), &d_))
      << Summary(d_);
  EXPECT_EQ(d_.kind, FdKind::kPipe);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  EXPECT_STREQ(d_.peers.peers[0].name, "pipe-writer");
  EXPECT_EQ(d_.peers.peers[0].fd, p[1]);
  EXPECT_TRUE(d_.scan.complete);
  EXPECT_NE(
      Summary(d_).find("other end held by " + std::to_string(child.pid()) + " \"pipe-writer\""),
      std::string::npos)
      << Summary(d_);
  reader.join();
  close(p[0]);
}

TEST_F(FdPeerTest, FifoNamesTheChildHoldingIt) {
  char dir[] = "/tmp/hangwatch-cause.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int opened[2];
  ASSERT_EQ(pipe2(opened, O_CLOEXEC), 0);
  PeerChild child("fifo-writer", [&] {
    (void)!open(fifo.c_str(), O_WRONLY);
    (void)!write(opened[1], "o", 1);  // its descriptor is in its table now
  });
  const int fd = open(fifo.c_str(), O_RDONLY | O_CLOEXEC);  // returns once the child opens it
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(read(opened[0], &c, 1), 1);
  close(opened[0]);
  close(opened[1]);
  ASSERT_TRUE(DescribeFd(0, fd, budget_, scratch_.get(), &d_)) << Summary(d_);
  EXPECT_EQ(d_.kind, FdKind::kFifo);
  EXPECT_EQ(d_.path, fifo);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  close(fd);
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST_F(FdPeerTest, SocketpairPeerIsTheOtherDescriptorOfThisProcess) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_TRUE(DescribeFd(0, sv[0], budget_, scratch_.get(), &d_)) << Summary(d_);
  EXPECT_EQ(d_.kind, FdKind::kUnixSocket);
  EXPECT_NE(d_.peer_inode, 0u);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, getpid());
  EXPECT_EQ(d_.peers.peers[0].fd, sv[1]);
  close(sv[0]);
  close(sv[1]);
}

TEST_F(FdPeerTest, LoopbackTcpNamesTheChildThatAcceptedAndTheListenerBefore) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int accepted[2];
  ASSERT_EQ(pipe2(accepted, O_CLOEXEC), 0);
  PeerChild child("tcp-server", [&] {
    // Accepts only when told: first the client sees the listener, then the accepted socket.
    char go;
    (void)!read(accepted[0], &go, 1);
    (void)!accept(listener, nullptr, nullptr);
  });
  close(listener);
  close(accepted[0]);
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  ASSERT_TRUE(DescribeFd(0, client, budget_, scratch_.get(), &d_)) << Summary(d_);
  EXPECT_EQ(d_.kind, FdKind::kTcp);
  EXPECT_TRUE(d_.loopback);
  EXPECT_EQ(d_.remote.port, ntohs(addr.sin_port));
  EXPECT_TRUE(d_.peer_is_listener) << Summary(d_);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());

  ASSERT_EQ(write(accepted[1], "g", 1), 1);
  // Accepted: the established peer socket, held by the child (waited for with a deadline).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    ASSERT_TRUE(DescribeFd(0, client, budget_, scratch_.get(), &d_));
  } while (d_.peer_is_listener && std::chrono::steady_clock::now() < deadline);
  EXPECT_FALSE(d_.peer_is_listener) << Summary(d_);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  EXPECT_STREQ(d_.peers.peers[0].name, "tcp-server");
  const std::string s = Summary(d_);
  EXPECT_NE(s.find("tcp 127.0.0.1:"), std::string::npos) << s;
  EXPECT_NE(s.find("-> 127.0.0.1:" + std::to_string(ntohs(addr.sin_port))), std::string::npos) << s;
  // The next sample: sock_diag's answer and the holder are remembered, the holder checked.
  ASSERT_TRUE(DescribeFd(0, client, budget_, scratch_.get(), &d_));
  EXPECT_TRUE(d_.scan.cached);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  EXPECT_EQ(Summary(d_), s);
  close(client);
  close(accepted[1]);
}

TEST_F(FdPeerTest, UnixConnectionNamesTheListenerUntilAcceptedThenTheAcceptingChild) {
  char dir[] = "/tmp/hangwatch-cause.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/server.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  int go[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  PeerChild child("unix-server", [&] {
    char c;
    (void)!read(go[0], &c, 1);
    (void)!accept(listener, nullptr, nullptr);
  });
  close(listener);
  close(go[0]);
  const int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_TRUE(DescribeFd(0, client, budget_, scratch_.get(), &d_)) << Summary(d_);
  EXPECT_EQ(d_.kind, FdKind::kUnixSocket);
  EXPECT_EQ(d_.socket_path, path);
  EXPECT_TRUE(d_.peer_is_listener) << Summary(d_);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  EXPECT_NE(Summary(d_).find(", listener " + std::to_string(child.pid())), std::string::npos)
      << Summary(d_);

  ASSERT_EQ(write(go[1], "g", 1), 1);
  scratch_->cache.Clear();
  // (While accept() moves it, the connection is briefly on neither side: asked again.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    ASSERT_TRUE(DescribeFd(0, client, budget_, scratch_.get(), &d_));
  } while ((d_.peer_is_listener || d_.peers.count == 0) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_FALSE(d_.peer_is_listener) << Summary(d_);
  EXPECT_EQ(d_.socket_path, path);  // the accepted socket carries the listener's name
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  close(client);
  close(go[1]);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_F(FdPeerTest, RegularFileGivesItsPath) {
  char path[] = "/tmp/hangwatch-cause-file.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(DescribeFd(0, fd, budget_, scratch_.get(), &d_));
  EXPECT_EQ(d_.kind, FdKind::kRegular);
  EXPECT_STREQ(d_.path, path);
  EXPECT_EQ(d_.peers.count, 0);
  EXPECT_EQ(Summary(d_), "fd " + std::to_string(fd) + ": regular file " + path);
  unlink(path);
  close(fd);
}

TEST_F(FdPeerTest, ClosedDescriptorIsUnknown) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(fd);
  EXPECT_FALSE(DescribeFd(0, fd, budget_, scratch_.get(), &d_));
  EXPECT_EQ(d_.kind, FdKind::kUnknown);
  EXPECT_EQ(d_.error, ENOENT);
  EXPECT_EQ(Summary(d_), "fd " + std::to_string(fd) + ": unknown (No such file or directory)");
  EXPECT_FALSE(DescribeFd(0, -1, budget_, scratch_.get(), &d_));
  EXPECT_FALSE(DescribeFd(0, 1 << 30, budget_, scratch_.get(), &d_));
}

TEST_F(FdPeerTest, DeadProcessIsUnknown) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  EXPECT_FALSE(DescribeFd(pid, 0, budget_, scratch_.get(), &d_));
  EXPECT_EQ(d_.kind, FdKind::kUnknown);
  EXPECT_NE(d_.error, 0);
  EXPECT_FALSE(DescribeFd(-5, 0, budget_, scratch_.get(), &d_));
  EXPECT_EQ(d_.error, ESRCH);
}

TEST_F(FdPeerTest, HoldersFoundOnceAreVerifiedNotRescannedUntilTheyLetGo) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  auto child = std::make_unique<PeerChild>(
      "pipe-writer", [&] { close(p[0]); }, /*after_body=*/true);
  const pid_t child_pid = child->pid();
  close(p[1]);
  ASSERT_TRUE(DescribeFd(0, p[0], budget_, scratch_.get(), &d_));
  EXPECT_FALSE(d_.scan.cached);
  ASSERT_EQ(d_.peers.count, 1);
  // The next sample: the same holder, checked with one readlink.
  ASSERT_TRUE(DescribeFd(0, p[0], budget_, scratch_.get(), &d_));
  EXPECT_TRUE(d_.scan.cached);
  ASSERT_EQ(d_.peers.count, 1);
  EXPECT_EQ(d_.peers.peers[0].pid, child_pid);
  // The writer died: the remembered holder no longer holds the pipe, so /proc is scanned again.
  child.reset();
  ASSERT_TRUE(DescribeFd(0, p[0], budget_, scratch_.get(), &d_));
  EXPECT_FALSE(d_.scan.cached);
  EXPECT_EQ(d_.peers.count, 0) << Summary(d_);
  EXPECT_NE(Summary(d_).find("peer process not found"), std::string::npos) << Summary(d_);
  close(p[0]);
}

// Another user's process: its /proc/PID/fd cannot be read. Run as nobody in a child (as root),
// the description is unknown with EACCES, and a pipe's holder scan counts the unreadable
// processes instead of failing.
TEST_F(FdPeerTest, UnreadableProcEntriesAreUnknownAndCounted) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to another user";
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(10);
    FdDescription d;
    if (DescribeFd(parent, 0, budget_, scratch_.get(), &d)) _exit(11);
    if (d.kind != FdKind::kUnknown || d.error != EACCES) _exit(12);
    // Its own pipe: described; the other processes (root's) are unreadable.
    if (!DescribeFd(0, p[0], budget_, scratch_.get(), &d)) _exit(13);
    if (d.kind != FdKind::kPipe || d.scan.unreadable == 0) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setresuid, 11-12: another user's descriptor, "
                                       "13-14: its own pipe";
  close(p[0]);
  close(p[1]);
}

TEST_F(FdPeerTest, BudgetCutsTheScanAndSaysSo) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  PeerChild child(
      "pipe-writer", [&] { close(p[0]); }, /*after_body=*/true);
  close(p[1]);
  budget_.max_processes = 1;  // this process only: the child is never reached
  ASSERT_TRUE(DescribeFd(0, p[0], budget_, scratch_.get(), &d_));
  EXPECT_EQ(d_.kind, FdKind::kPipe);
  EXPECT_EQ(d_.peers.count, 0);
  EXPECT_FALSE(d_.scan.complete);
  EXPECT_NE(Summary(d_).find("scan cut"), std::string::npos) << Summary(d_);
  // The cut scan is not remembered as "nobody holds it": the next description, within a budget
  // that reaches the child (and no time bound a busy machine could run out), scans again and
  // names it.
  budget_ = ScanBudget{};
  budget_.max_ns = 60'000'000'000;
  ASSERT_TRUE(DescribeFd(0, p[0], budget_, scratch_.get(), &d_));
  EXPECT_FALSE(d_.scan.cached);
  ASSERT_EQ(d_.peers.count, 1) << Summary(d_);
  EXPECT_EQ(d_.peers.peers[0].pid, child.pid());
  close(p[0]);
}

}  // namespace
}  // namespace hangwatch::cause
