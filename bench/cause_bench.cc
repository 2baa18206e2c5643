// Cost of the cause resolvers (cause/) beside the blocked sample they would be added to, in one
// run: a /proc capture of a thread blocked in read on a Unix socket (the agent's
// ProcFirstSampler: the baseline), the same plus DescribeFd of that socket (peer lookup through
// sock_diag and the /proc/*/fd scan), DescribeFd alone for each kind of descriptor,
// DescribeWaitFds of a poll, a scheduling/pressure snapshot, and the kernel-wait read.
// The /proc scan's cost grows with the number of processes and descriptors on the machine: the
// counters report how many were read.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "cause/fd_peer.h"
#include "cause/kernel_wait.h"
#include "cause/sched_pressure.h"
#include "cause/wait_fds.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/proc_files.h"
#include "unwind/thread_capture.h"

namespace {

using hangwatch::cause::DescribeFd;
using hangwatch::cause::FdDescription;
using hangwatch::cause::FdPeerScratch;
using hangwatch::cause::ScanBudget;

// A child holding the other end of a socketpair (and of a pipe, and a loopback TCP connection
// it accepted); killed by the destructor.
struct PeerChild {
  int unix_fd = -1, pipe_fd = -1, tcp_fd = -1;
  pid_t pid = -1;
  PeerChild() {
    int sv[2], p[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    pipe2(p, O_CLOEXEC);
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listener, 1);
    socklen_t len = sizeof addr;
    getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    pid = fork();
    if (pid == 0) {
      prctl(PR_SET_NAME, "bench-peer");
      const int accepted = accept(listener, nullptr, nullptr);
      (void)accepted;
      for (;;) pause();
    }
    close(listener);
    close(sv[1]);
    close(p[1]);
    unix_fd = sv[0];
    pipe_fd = p[0];
    tcp_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connect(tcp_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    // Until the child accepted (its socket then has a holder).
    FdPeerScratch scratch;
    FdDescription d;
    for (int i = 0; i < 1000; ++i) {
      DescribeFd(0, tcp_fd, ScanBudget{}, &scratch, &d);
      if (!d.peer_is_listener && d.peers.count > 0) break;
      usleep(1000);
    }
  }
  ~PeerChild() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(unix_fd);
    close(pipe_fd);
    close(tcp_fd);
  }
};

void ReportScan(benchmark::State& state, const FdDescription& d) {
  state.counters["processes"] = d.scan.processes;
  state.counters["descriptors"] = d.scan.descriptors;
  state.counters["peers"] = d.peers.count;
}

// `which`: 0 Unix socket, 1 loopback TCP, 2 pipe, 3 regular file. `first_sample`: the caches
// are cleared before each call (the first sample of a hang: a full /proc scan); else the
// holders found by the first call are only checked (the next samples).
void BM_DescribeFd(benchmark::State& state, int which, bool first_sample) {
  PeerChild child;
  char path[] = "/tmp/hangwatch-cause-bench.XXXXXX";
  const int file = mkstemp(path);
  unlink(path);
  const int fds[] = {child.unix_fd, child.tcp_fd, child.pipe_fd, file};
  auto scratch = std::make_unique<FdPeerScratch>();
  FdDescription d;
  for (auto _ : state) {
    if (first_sample) hangwatch::cause::ForgetPeers(scratch.get());
    DescribeFd(0, fds[which], ScanBudget{}, scratch.get(), &d);
    benchmark::DoNotOptimize(d);
  }
  if (which < 3 && d.peers.count != 1) state.SkipWithError("peer not found");
  ReportScan(state, d);
  close(file);
}

// A thread blocked in read (or poll) on the Unix socket whose other end the child holds.
struct BlockedReader {
  hangwatch::unwind::ThreadInfo info;
  std::atomic<bool> ready{false};
  std::thread thread;
  int fd;
  explicit BlockedReader(int socket_fd, bool use_poll) : fd(socket_fd) {
    thread = std::thread([this, use_poll] {
      hangwatch::unwind::RegisterCurrentThread(&info);
      ready = true;
      if (use_poll) {
        pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, -1);
      } else {
        char c;
        (void)!read(fd, &c, 1);
      }
    });
    while (!ready) std::this_thread::yield();
    for (;;) {  // until it sleeps in the kernel
      hangwatch::unwind::CaptureBuffer probe(4, 0);
      if (hangwatch::unwind::ReadBlockedThread(info, &probe) ==
          hangwatch::unwind::ProcReadStatus::kOk) {
        break;
      }
      std::this_thread::yield();
    }
  }
  ~BlockedReader() {
    shutdown(fd, SHUT_RDWR);
    thread.join();
  }
};

hangwatch::unwind::TaskSyscall ReadSyscall(pid_t tid) {
  char path[96], text[256];
  hangwatch::unwind::TaskPath(0, tid, "syscall", path, sizeof path);
  hangwatch::unwind::TaskSyscall call;
  const ssize_t n = hangwatch::unwind::ReadProcFile(path, text, sizeof text);
  if (n > 0) hangwatch::unwind::ParseTaskSyscall(text, static_cast<size_t>(n), &call);
  return call;
}

// The blocked sample, with or without the cause of its wait (its syscall line, then the
// descriptor and its peer): the next samples of a hang (the caches hold the peer).
void BM_BlockedSample(benchmark::State& state, bool with_cause) {
  PeerChild child;
  BlockedReader reader(child.unix_fd, false);
  hangwatch::unwind::CaptureBuffer buffer(256, 64 * 1024);
  hangwatch::unwind::ProcFirstSampler sampler(nullptr);
  auto scratch = std::make_unique<FdPeerScratch>();
  FdDescription d;
  uint64_t failed = 0;
  for (auto _ : state) {
    if (sampler.Capture(reader.info, &buffer) != hangwatch::unwind::CaptureStatus::kOk) ++failed;
    if (with_cause) {
      const hangwatch::unwind::TaskSyscall call = ReadSyscall(reader.info.tid);
      DescribeFd(0, static_cast<int>(call.args[0]), ScanBudget{}, scratch.get(), &d);
      benchmark::DoNotOptimize(d);
    }
  }
  state.counters["failed"] = static_cast<double>(failed);
  if (with_cause) ReportScan(state, d);
}

void BM_DescribeWaitFdsPoll(benchmark::State& state) {
  PeerChild child;
  BlockedReader reader(child.unix_fd, true);
  auto scratch = std::make_unique<hangwatch::cause::WaitFdsScratch>();
  hangwatch::cause::WaitFds w;
  const hangwatch::unwind::TaskSyscall call = ReadSyscall(reader.info.tid);
  for (auto _ : state) {
    DescribeWaitFds(0, call, ScanBudget{}, scratch.get(), &w);
    benchmark::DoNotOptimize(w);
  }
  if (w.count != 1 || w.described[0].peers.count != 1) state.SkipWithError("peer not found");
}

void BM_SchedSnapshot(benchmark::State& state) {
  auto probe = std::make_unique<hangwatch::cause::SchedProbe>();
  probe->Init(0);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  hangwatch::cause::SchedSnapshot before, after;
  probe->Take(tid, &before);
  for (auto _ : state) {
    probe->Take(tid, &after);
    benchmark::DoNotOptimize(hangwatch::cause::Compare(before, after));
  }
  state.counters["cgroup"] = after.has_cgroup;
  state.counters["psi"] = after.cpu.some.present;
}

void BM_KernelWait(benchmark::State& state) {
  PeerChild child;
  BlockedReader reader(child.unix_fd, false);
  hangwatch::cause::KernelWait w;
  for (auto _ : state) {
    hangwatch::cause::ReadKernelWait(0, reader.info.tid, &w);
    benchmark::DoNotOptimize(w);
  }
  state.counters["stack_frames"] = w.stack_frames;
}

BENCHMARK_CAPTURE(BM_BlockedSample, plain, false)->Name("BM_BlockedSample/plain");
BENCHMARK_CAPTURE(BM_BlockedSample, with_fd_peer, true)->Name("BM_BlockedSample/with_fd_peer");
BENCHMARK_CAPTURE(BM_DescribeFd, unix_first, 0, true)->Name("BM_DescribeFd/unix_peer/first");
BENCHMARK_CAPTURE(BM_DescribeFd, unix_next, 0, false)->Name("BM_DescribeFd/unix_peer/next");
BENCHMARK_CAPTURE(BM_DescribeFd, tcp_first, 1, true)->Name("BM_DescribeFd/tcp_loopback/first");
BENCHMARK_CAPTURE(BM_DescribeFd, tcp_next, 1, false)->Name("BM_DescribeFd/tcp_loopback/next");
BENCHMARK_CAPTURE(BM_DescribeFd, pipe_first, 2, true)->Name("BM_DescribeFd/pipe/first");
BENCHMARK_CAPTURE(BM_DescribeFd, pipe_next, 2, false)->Name("BM_DescribeFd/pipe/next");
BENCHMARK_CAPTURE(BM_DescribeFd, regular_file, 3, false)->Name("BM_DescribeFd/regular_file");
BENCHMARK(BM_DescribeWaitFdsPoll);
BENCHMARK(BM_SchedSnapshot);
BENCHMARK(BM_KernelWait);

}  // namespace

BENCHMARK_MAIN();
