// End to end, the causes the cause/ resolvers give a hang: a read on a
// pipe names the child that holds its other end (ipc), a main thread sharing its CPU with three
// busy threads is starved, a mapped file read back from disk page by page is a fault. Each
// peer is started here and killed and reaped at the end. And what the agent's FdWaitResolver
// keeps between the samples of one wait: a description whose scan for the other end was cut
// short by its budget is not kept as the answer.
#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "agent/samplers/wait_fd_cause.h"
#include "hangwatch/hangwatch.h"
#include "report/report_decode.h"
#include "report/report_record.h"
#include "tests/agent/e2e_util.h"
#include "tests/agent/own_schedule.h"
#include "tests/cause/peer_child.h"

namespace hangwatch {
namespace {

std::string ProcessesOf(const Cause& c) {
  std::string s;
  for (const CauseProcess& p : c.peers) s += std::to_string(p.pid) + " " + p.name + "; ";
  return s;
}

TEST(WaitCauseIpcTest, PipeReadNamesTheChildThatAnswersAfterASecond) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  int answer[2];
  int go[2];
  ASSERT_EQ(pipe2(answer, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  // The child answers a second after it is asked (async-signal-safe calls only).
  testing::PeerChild child("pipe-peer", [&] {
    close(answer[0]);
    close(go[1]);
    char c;
    while (read(go[0], &c, 1) < 0 && errno == EINTR) {
    }
    timespec second{1, 0};
    while (nanosleep(&second, &second) != 0 && errno == EINTR) {
    }
    (void)!write(answer[1], "a", 1);
  });
  ASSERT_GT(child.pid(), 0);
  close(answer[1]);
  close(go[0]);

  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  ASSERT_EQ(write(go[1], "q", 1), 1);
  char c = 0;
  ASSERT_EQ(read(answer[0], &c, 1), 1);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  close(answer[0]);
  close(go[1]);

  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kIpc) << h.cause.summary;
  ASSERT_EQ(h.cause.peers.size(), 1u) << ProcessesOf(h.cause);
  EXPECT_EQ(h.cause.peers[0].pid, child.pid());
  EXPECT_EQ(h.cause.peers[0].name, "pipe-peer");
  EXPECT_EQ(h.cause.path.rfind("pipe:[", 0), 0u) << h.cause.path;
  ASSERT_EQ(h.cause.fds.size(), 1u);
  EXPECT_EQ(h.cause.fds[0], answer[0]);
  EXPECT_NE(h.cause.summary.find("waiting for process " + std::to_string(child.pid()) +
                                 " \"pipe-peer\" over pipe:["),
            std::string::npos)
      << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("in read(fd " + std::to_string(answer[0])), std::string::npos)
      << h.cause.summary;
  // The JSON line carries it and reads back the same.
  HangRecord back;
  std::string error;
  ASSERT_TRUE(report::DecodeHang(report::Encode(h), &back, &error)) << error;
  EXPECT_EQ(back.cause.kind, CauseKind::kIpc);
  ASSERT_EQ(back.cause.peers.size(), 1u);
  EXPECT_EQ(back.cause.peers[0].pid, child.pid());
  EXPECT_EQ(back.cause.summary, h.cause.summary);
}

// The same wait through epoll_wait: the descriptor comes from the epoll's interest list.
TEST(WaitCauseIpcTest, EpollWaitOnAPipeNamesTheChildThatAnswersAfterASecond) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();
  int answer[2];
  int go[2];
  ASSERT_EQ(pipe2(answer, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  testing::PeerChild child("epoll-peer", [&] {
    close(answer[0]);
    close(go[1]);
    char c;
    while (read(go[0], &c, 1) < 0 && errno == EINTR) {
    }
    timespec second{1, 0};
    while (nanosleep(&second, &second) != 0 && errno == EINTR) {
    }
    (void)!write(answer[1], "a", 1);
  });
  ASSERT_GT(child.pid(), 0);
  close(answer[1]);
  close(go[0]);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = answer[0];
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, answer[0], &ev), 0);

  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  ASSERT_EQ(write(go[1], "q", 1), 1);
  epoll_event got{};
  ASSERT_EQ(epoll_wait(ep, &got, 1, 30'000), 1);
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  close(ep);
  close(answer[0]);
  close(go[1]);

  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kIpc) << h.cause.summary;
  ASSERT_EQ(h.cause.fds.size(), 1u) << h.cause.summary;
  EXPECT_EQ(h.cause.fds[0], answer[0]);
  ASSERT_EQ(h.cause.peers.size(), 1u) << ProcessesOf(h.cause);
  EXPECT_EQ(h.cause.peers[0].pid, child.pid());
  EXPECT_NE(h.cause.summary.find("epoll"), std::string::npos) << h.cause.summary;
}

// The CPU this thread runs on, and all threads given to it.
int PinToOneCpu() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mine)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0 ? cpu : -1;
  }
  return -1;
}

TEST(WaitCauseStarvedTest, MainThreadSharingItsCpuWithThreeBusyThreadsIsStarved) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  const int cpu = PinToOneCpu();
  ASSERT_GE(cpu, 0);
  std::atomic<bool> stop{false};
  std::atomic<int> spinning{0};
  std::vector<std::thread> busy;
  for (int i = 0; i < 3; ++i) {
    busy.emplace_back([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
      spinning.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  while (spinning.load() < 3) std::this_thread::yield();

  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  const uint64_t before = GetStats().samples;
  BeginWork();
  // Busy on the shared CPU until the watchdog has sampled the pass a while.
  volatile uint64_t x = 0;
  while (GetStats().samples < before + 30) x = x + 1;
  EndWork();
  ASSERT_TRUE(collector.WaitFor(1));
  Stop();
  stop = true;
  for (std::thread& t : busy) t.join();
  sched_setaffinity(0, sizeof(saved), &saved);

  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kStarved) << h.cause.summary;
  // Four threads on one CPU: the main thread waited for it at least half of the hang.
  EXPECT_GE(h.cause.run_delay_ms * 2, h.duration_ms / 2) << h.cause.summary;
  EXPECT_GE(h.cause.runnable_threads, 1u) << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("runnable but not running: waited "), std::string::npos)
      << h.cause.summary;
}

TEST(WaitCauseFaultTest, MappedFileDroppedFromThePageCacheIsAFault) {
  // On disk (not tmpfs: its pages cannot be dropped), next to the test binary's temp files.
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp ? tmp : "/tmp") + "/hangwatch_fault_";
  path += std::to_string(getpid());
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  unlink(path.c_str());
  const size_t size = size_t{64} << 20;
  std::vector<char> chunk(1 << 20, 'x');
  for (size_t done = 0; done < size; done += chunk.size()) {
    ASSERT_EQ(write(fd, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
  }
  ASSERT_EQ(fsync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  madvise(m, size, MADV_RANDOM);  // one page per fault: no read-ahead
  unsigned char probe = 0;
  if (mincore(m, 4096, &probe) == 0 && (probe & 1) != 0) {
    munmap(m, size);
    close(fd);
    GTEST_SKIP() << "the file system keeps the file's pages after POSIX_FADV_DONTNEED";
  }

  Config config = testing::TestConfig();
  ASSERT_TRUE(Start(config).ok());
  testing::HangCollector collector;
  const testing::OwnSchedule before = testing::OwnSchedule::Now();
  BeginWork();
  volatile unsigned char sum = 0;
  const auto* bytes = static_cast<const unsigned char*>(m);
  for (size_t off = 0; off < size; off += 4096) sum = sum + bytes[off];
  EndWork();
  const testing::OwnSchedule after = testing::OwnSchedule::Now();
  const bool reported = collector.WaitFor(1, std::chrono::seconds(3));
  Stop();
  munmap(m, size);
  close(fd);
  if (!reported) GTEST_SKIP() << "reading 64 MiB back page by page took less than the threshold";

  const HangRecord h = collector.hangs()[0];
  // The pass's shares, as the test measured them: on the CPU, waiting for one (a loaded
  // machine: after each fault the thread waits to run again), and blocked reading pages in.
  const testing::PassShares pass(before, after);
  const std::string shares = h.cause.summary + " (" + pass.Text() + ")";
  std::printf("cause: %s\n", shares.c_str());
  // The larger share names it (RefineBySchedule): the fault when reading pages in took longer
  // than both the wait for a CPU and the time on it; on a machine loaded enough that it waited
  // longer for a CPU, starved (half the pass or more) or the machine's CPU pressure, with its
  // faults as a figure. Each measured with a margin: the agent's counters start at its first
  // sample, not at the pass's start.
  const uint64_t margin = pass.wall_ns / 10;
  if (pass.blocked_ns >= pass.run_delay_ns + margin && pass.blocked_ns >= pass.cpu_ns + margin) {
    ASSERT_EQ(h.cause.kind, CauseKind::kFault) << shares;
  } else {
    ASSERT_TRUE(h.cause.kind == CauseKind::kFault || h.cause.kind == CauseKind::kStarved ||
                h.cause.kind == CauseKind::kPressure)
        << shares;
  }
  if (pass.run_delay_ns >= pass.blocked_ns + margin && pass.Permille(pass.run_delay_ns) >= 600) {
    EXPECT_EQ(h.cause.kind, CauseKind::kStarved) << shares;
  }
  EXPECT_GT(h.cause.major_faults, 0u);
  // A sample found the thread in the fault: the mapping with the most pages out of memory.
  bool in_fault = false;
  for (const TimelineEntry& t : h.timeline) in_fault |= t.state == 'D';
  // (Unlinked already: the maps say "PATH (deleted)".)
  std::printf("mapping %s, a sample in the fault: %d\n", h.cause.mapping.c_str(), in_fault);
  if (in_fault && h.cause.kind == CauseKind::kFault) {
    EXPECT_EQ(h.cause.mapping.rfind(path, 0), 0u) << h.cause.summary;
  }
  EXPECT_NE(h.cause.summary.find(std::to_string(h.cause.major_faults) + " major page faults"),
            std::string::npos)
      << h.cause.summary;
}

// A thread of this process in read() on `fd`, as the probe decodes it.
cause::DecodedWait ReadOn(int fd) {
  cause::DecodedWait w;
  w.wait = cause::SyscallWait::kFile;
  w.nr = SYS_read;
  w.fd = fd;
  w.args[0] = static_cast<uint64_t>(fd);
  return w;
}

// Sends descriptor `fd` over Unix socket `via` (async-signal-safe: a PeerChild's body).
void SendFd(int via, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  (void)!sendmsg(via, &msg, 0);
}

int ReceiveFd(int via) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(via, &msg, 0) != 1) return -1;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

// A budget that stops every /proc scan after this process's descriptors (as a loaded machine
// stops one at its time bound): a peer socket held by a child only is not reached.
cause::ScanBudget ThisProcessOnly() {
  cause::ScanBudget b;
  b.max_processes = 1;
  return b;
}

// The first sample of a wait on a Unix socket scans /proc for the peer's holder and is cut
// short; the next sample, once the peer is within the budget's reach (this process holds it
// too), names it. Remembering the cut scan kept "no peer" for the whole hang.
TEST(FdWaitResolverTest, AScanCutShortIsTriedAgainOnTheNextSample) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();  // nor a socket peer under qemu-user
  int sv[2], ctl[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl), 0);
  // The child holds the peer end and hands it over when asked.
  testing::PeerChild child("peer-end", [&] {
    char c;
    if (read(ctl[1], &c, 1) == 1) SendFd(ctl[1], sv[1]);
  });
  close(sv[1]);
  close(ctl[1]);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  agent::FdWaitResolver resolver(ThisProcessOnly());
  agent::WaitCause first, second;
  resolver.Resolve(tid, 'S', ReadOn(sv[0]), &first);
  EXPECT_EQ(first.kind, CauseKind::kIpc);
  EXPECT_EQ(first.num_peers, 0) << "the child is out of the budget's reach";
  ASSERT_EQ(write(ctl[0], "?", 1), 1);
  const int peer = ReceiveFd(ctl[0]);
  ASSERT_GE(peer, 0);
  resolver.Resolve(tid, 'S', ReadOn(sv[0]), &second);
  EXPECT_EQ(resolver.descriptions(), 2u) << "the cut scan was kept as the answer";
  EXPECT_EQ(second.kind, CauseKind::kIpc);
  ASSERT_EQ(second.num_peers, 1);
  EXPECT_EQ(second.peers[0].pid, getpid());
  close(peer);
  close(sv[0]);
  close(ctl[0]);
}

// Scans that never fit their budget cost a bounded number of descriptions per wait; one that
// finishes is an answer for the rest of the hang.
TEST(FdWaitResolverTest, CutScansAreRetriedABoundedNumberOfTimesAFinishedOneIsKept) {
  HANGWATCH_SKIP_WITHOUT_OUR_SYSCALL_LINES();  // nor a socket peer under qemu-user
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  testing::PeerChild child("peer-end", [] {});
  close(sv[1]);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  agent::WaitCause cause;
  agent::FdWaitResolver cut(ThisProcessOnly());
  for (int i = 0; i < 20; ++i) cut.Resolve(tid, 'S', ReadOn(sv[0]), &cause);
  EXPECT_EQ(cut.descriptions(), 1u + agent::FdWaitResolver::kMaxRedescriptions);
  EXPECT_EQ(cause.num_peers, 0);
  // No time bound to run out on a busy machine: the scan finishes and names the child.
  cause::ScanBudget unhurried;
  unhurried.max_ns = 60'000'000'000;
  agent::FdWaitResolver whole(unhurried);
  for (int i = 0; i < 20; ++i) whole.Resolve(tid, 'S', ReadOn(sv[0]), &cause);
  EXPECT_EQ(whole.descriptions(), 1u);
  ASSERT_EQ(cause.num_peers, 1);
  EXPECT_EQ(cause.peers[0].pid, child.pid());
  EXPECT_STREQ(cause.peers[0].name, "peer-end");
  close(sv[0]);
}

}  // namespace
}  // namespace hangwatch
