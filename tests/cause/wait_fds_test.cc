// DescribeWaitFds on threads of this process blocked in poll, select and epoll_wait on a pipe
// whose writer is a child, a poll with no descriptors (a sleep), and bad arguments.
#include "cause/wait_fds.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "blocked_thread.h"
#include "peer_child.h"

namespace hangwatch::cause {
namespace {

using ::hangwatch::testing::PeerChild;

std::string Summary(const WaitFds& w) {
  char buf[1024];
  FormatSummary(w, buf, sizeof buf);
  return buf;
}

class WaitFdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(pipe_, O_CLOEXEC), 0);
    child_ = std::make_unique<PeerChild>(
        "pipe-writer", [this] { close(pipe_[0]); }, /*after_body=*/true);
    close(pipe_[1]);
  }
  void TearDown() override {
    child_.reset();  // killed: the pipe reaches EOF and the waiting thread returns
    if (waiter_.joinable()) waiter_.join();
    close(pipe_[0]);
  }

  // Runs `wait` on a thread and returns its system call once it sleeps in one of `nrs`.
  unwind::TaskSyscall Blocked(std::function<void()> wait, std::initializer_list<long> nrs) {
    std::atomic<pid_t> tid{0};
    waiter_ = std::thread([&tid, wait] {
      tid = testing::CurrentTid();
      wait();
    });
    while (tid == 0) std::this_thread::yield();
    unwind::TaskSyscall call;
    EXPECT_TRUE(testing::WaitForSyscall(0, tid, nrs, &call));
    return call;
  }

  void ExpectThePipeWithItsWriter(const WaitFds& w) {
    ASSERT_EQ(w.count, 1u) << Summary(w);
    EXPECT_EQ(w.fds[0].fd, pipe_[0]);
    EXPECT_EQ(w.described[0].kind, FdKind::kPipe);
    ASSERT_EQ(w.described[0].peers.count, 1) << Summary(w);
    EXPECT_EQ(w.described[0].peers.peers[0].pid, child_->pid());
    EXPECT_STREQ(w.described[0].peers.peers[0].name, "pipe-writer");
  }

  int pipe_[2];
  std::unique_ptr<PeerChild> child_;
  std::thread waiter_;
  ScanBudget budget_;
  std::unique_ptr<WaitFdsScratch> scratch_ = std::make_unique<WaitFdsScratch>();
  WaitFds w_;
};

TEST_F(WaitFdsTest, PollOnAPipeNamesItsWriter) {
  const int fd = pipe_[0];
  const unwind::TaskSyscall call = Blocked(
      [fd] {
        pollfd p[2] = {{-1, POLLIN, 0}, {fd, POLLIN, 0}};  // a negative fd is ignored
        poll(p, 2, 30'000);
      },
      {SYS_poll, SYS_ppoll});
  ASSERT_TRUE(DescribeWaitFds(0, call, budget_, scratch_.get(), &w_)) << Summary(w_);
  EXPECT_EQ(w_.call, WaitCall::kPoll);
  EXPECT_EQ(w_.total, 1u);
  EXPECT_EQ(w_.fds[0].events & POLLIN, POLLIN);
  EXPECT_EQ(w_.timeout_ms, 30'000);
  ExpectThePipeWithItsWriter(w_);
  EXPECT_EQ(Summary(w_).rfind("poll on 1 descriptor (timeout 30000 ms): fd ", 0), 0u)
      << Summary(w_);
}

TEST_F(WaitFdsTest, SelectOnAPipeNamesItsWriter) {
  const int fd = pipe_[0];
  const unwind::TaskSyscall call = Blocked(
      [fd] {
        fd_set read_set;
        FD_ZERO(&read_set);
        FD_SET(fd, &read_set);
        select(fd + 1, &read_set, nullptr, nullptr, nullptr);
      },
      {SYS_select, SYS_pselect6});
  ASSERT_TRUE(DescribeWaitFds(0, call, budget_, scratch_.get(), &w_)) << Summary(w_);
  EXPECT_EQ(w_.call, WaitCall::kSelect);
  EXPECT_EQ(w_.timeout_ms, -1);
  EXPECT_EQ(w_.fds[0].events, static_cast<uint32_t>(POLLIN));
  ExpectThePipeWithItsWriter(w_);
}

TEST_F(WaitFdsTest, EpollWaitListsTheInterestList) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = pipe_[0];
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, pipe_[0], &ev), 0);
  const unwind::TaskSyscall call = Blocked(
      [ep] {
        epoll_event out;
        epoll_wait(ep, &out, 1, -1);
      },
      {SYS_epoll_wait, SYS_epoll_pwait});
  ASSERT_TRUE(DescribeWaitFds(0, call, budget_, scratch_.get(), &w_)) << Summary(w_);
  EXPECT_EQ(w_.call, WaitCall::kEpoll);
  EXPECT_EQ(w_.epoll_fd, ep);
  EXPECT_EQ(w_.timeout_ms, -1);
  EXPECT_EQ(w_.fds[0].events & EPOLLIN, static_cast<uint32_t>(EPOLLIN));
  ExpectThePipeWithItsWriter(w_);
  child_.reset();
  waiter_.join();
  close(ep);
}

TEST_F(WaitFdsTest, PollWithoutDescriptorsIsASleep) {
  const unwind::TaskSyscall call = Blocked([] { poll(nullptr, 0, 600); }, {SYS_poll, SYS_ppoll});
  ASSERT_TRUE(DescribeWaitFds(0, call, budget_, scratch_.get(), &w_));
  EXPECT_EQ(w_.total, 0u);
  EXPECT_EQ(w_.error, 0);
  EXPECT_EQ(w_.timeout_ms, 600);
  EXPECT_EQ(Summary(w_), "poll with no descriptors (timeout 600 ms)");
}

TEST(WaitFdsBadInput, UnreadableArgumentsAreAnErrorNotAFault) {
  auto scratch = std::make_unique<WaitFdsScratch>();
  WaitFds w;
  unwind::TaskSyscall call;
  call.fields = 9;
  call.nr = SYS_poll;
  call.args[0] = 0x10;  // unmapped
  call.args[1] = 3;
  EXPECT_FALSE(DescribeWaitFds(0, call, ScanBudget{}, scratch.get(), &w));
  EXPECT_EQ(w.error, EFAULT);
  EXPECT_EQ(w.count, 0u);
  EXPECT_EQ(Summary(w), "poll: arguments unreadable (Bad address)");
  call.args[1] = ~0ull;  // not a descriptor count
  EXPECT_FALSE(DescribeWaitFds(0, call, ScanBudget{}, scratch.get(), &w));
  EXPECT_EQ(w.error, EINVAL);
  call.nr = SYS_epoll_wait;
  call.args[0] = 1 << 30;  // no such epoll descriptor
  EXPECT_FALSE(DescribeWaitFds(0, call, ScanBudget{}, scratch.get(), &w));
  EXPECT_NE(w.error, 0);
  call.nr = SYS_read;
  EXPECT_FALSE(DescribeWaitFds(0, call, ScanBudget{}, scratch.get(), &w));
  EXPECT_EQ(w.call, WaitCall::kNone);
  call.nr = SYS_poll;
  call.args[0] = 0x10;
  EXPECT_FALSE(DescribeWaitFds(99'999'999, call, ScanBudget{}, scratch.get(), &w));  // no such pid
  EXPECT_NE(w.error, 0);
}

}  // namespace
}  // namespace hangwatch::cause
