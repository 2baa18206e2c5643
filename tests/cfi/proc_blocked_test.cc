// Threads blocked in the kernel (nanosleep, epoll_wait, poll, a futex wait, read) read through
// /proc (unwind/proc_blocked_reader.h) and unwound with CFI from the syscall wrapper: the whole
// chain back to the thread's entry, as eu-stack sees it; 1,000 samples cause no EINTR, while
// the signal does.
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "symbols/cfi_unwinder.h"
#include "tests/cfi/cfi_test_util.h"
#include "tests/sanitizers.h"
#include "tests/unwind/target_thread.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/signal_sampler.h"

using hangwatch::SampleMethod;
using hangwatch::symbols::CfiUnwinder;
using hangwatch::testing::EuStackPcs;
using hangwatch::testing::HasChain;
using hangwatch::testing::UnwindCapture;
using hangwatch::testing::Unwound;
using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::ProcFirstSampler;
using hangwatch::unwind::ProcReadStatus;
using hangwatch::unwind::ReadBlockedThread;
using hangwatch::unwind::RegisterCurrentThread;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::ThreadInfo;

namespace {

enum class Kind { kNanosleep, kEpollWait, kPoll, kFutex, kRead };
const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNanosleep:
      return "nanosleep";
    case Kind::kEpollWait:
      return "epoll_wait";
    case Kind::kPoll:
      return "poll";
    case Kind::kFutex:
      return "futex";
    case Kind::kRead:
      return "read";
  }
  return "?";
}

// The system calls each kind may block in (libc picks among them).
std::vector<long> Syscalls(Kind k) {
  switch (k) {
    case Kind::kNanosleep:
      return {SYS_clock_nanosleep, SYS_nanosleep};
    case Kind::kEpollWait:
      return {SYS_epoll_wait, SYS_epoll_pwait};
    case Kind::kPoll:
      return {SYS_poll, SYS_ppoll};
    case Kind::kFutex:
      return {SYS_futex};
    case Kind::kRead:
      return {SYS_read};
  }
  return {};
}

void NoopHandler(int) {}

// The release of a nanosleep: SIGUSR1 with a handler and no SA_RESTART.
void InstallReleaseHandler() {
  struct sigaction sa {};
  sa.sa_handler = NoopHandler;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace

struct Sleeper;
extern "C" void cfi_blocked_body(Sleeper* s);

// One thread blocking, in a loop, in the kind's call; counts the EINTRs it sees before it is
// told to stop.
struct Sleeper {
  Kind kind;
  std::atomic<bool> stop{false};
  std::atomic<int> eintr{0};
  std::atomic<int> calls{0};
  int futex_word = 0;
  int pipe_fds[2] = {-1, -1};
  int event_fd = -1;
  int epoll_fd = -1;
  ThreadInfo info;
  std::atomic<bool> registered{false};
  std::thread thread;

  explicit Sleeper(Kind k) : kind(k) {
    InstallReleaseHandler();
    if (pipe(pipe_fds) != 0) std::abort();
    event_fd = eventfd(0, EFD_CLOEXEC);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, event_fd, &ev);
    thread = std::thread(&Sleeper::Main, this);
    while (!registered.load()) std::this_thread::yield();
  }
  ~Sleeper() {
    stop = true;
    // Wake it whatever it sleeps in; nanosleep needs a signal (its EINTR is not counted).
    __atomic_store_n(&futex_word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    uint64_t one = 1;
    (void)!write(event_fd, &one, sizeof one);
    (void)!write(pipe_fds[1], "x", 1);
    pthread_kill(thread.native_handle(), SIGUSR1);
    thread.join();
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    close(event_fd);
    close(epoll_fd);
  }

  void Main() {
    RegisterCurrentThread(&info);
    registered = true;
    cfi_blocked_body(this);
  }

  // True once the thread sleeps in one of the kind's system calls (read from /proc).
  bool Sleeping() const {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", info.tid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) return false;
    long nr = -1;
    const bool ok = std::fscanf(f, "%ld", &nr) == 1;
    std::fclose(f);
    if (!ok) return false;
    for (long s : Syscalls(kind)) {
      if (s == nr) return true;
    }
    return false;
  }
  void WaitSleeping() const {
    while (!Sleeping()) std::this_thread::yield();
  }
};

extern "C" {
__attribute__((noinline)) void cfi_block_once(Sleeper* s) {
  int rc = 0;
  switch (s->kind) {
    case Kind::kNanosleep: {
      timespec ts{10, 0};
      rc = nanosleep(&ts, nullptr);
      break;
    }
    case Kind::kEpollWait: {
      epoll_event ev{};
      rc = epoll_wait(s->epoll_fd, &ev, 1, -1);
      break;
    }
    case Kind::kPoll: {
      pollfd p{s->pipe_fds[0], POLLIN, 0};
      rc = poll(&p, 1, -1);
      break;
    }
    case Kind::kFutex:
      rc = static_cast<int>(
          syscall(SYS_futex, &s->futex_word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0));
      break;
    case Kind::kRead: {
      char c;
      rc = static_cast<int>(read(s->pipe_fds[0], &c, 1));
      break;
    }
  }
  if (rc == -1 && errno == EINTR && !s->stop.load()) s->eintr.fetch_add(1);
  s->calls.fetch_add(1);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_blocked_caller(Sleeper* s) {
  while (!s->stop.load()) cfi_block_once(s);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_blocked_body(Sleeper* s) {
  cfi_blocked_caller(s);
  asm volatile("" ::: "memory");
}
}  // extern "C"

namespace {

// Under AddressSanitizer, read() is its interceptor's, a function that keeps its frame by rbp
// (its CFA rule is rbp + 16): /proc gives pc and sp only, so the walk cannot step over it, and
// the frame-pointer scan above it finds whatever stale frame records the thread's earlier calls
// left among the interceptor's locals (the caller, or RegisterCurrentThread: which one depends
// on what ran before, such as whether the dynamic linker resolved read() on this thread). The
// chain through it is checked in the plain build.
#if HW_TEST_ASAN
constexpr bool kReadIsIntercepted = true;
#else
constexpr bool kReadIsIntercepted = false;
#endif

class ProcBlockedTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    auto unwinder = CfiUnwinder::ForSelf();
    ASSERT_TRUE(unwinder.ok()) << unwinder.status();
    unwinder_ = std::move(*unwinder);
  }
  std::unique_ptr<CfiUnwinder> unwinder_;
};

TEST_P(ProcBlockedTest, ReadThroughProcShowsTheWholeChain) {
  Sleeper s(GetParam());
  s.WaitSleeping();
  CaptureBuffer capture(256, 64 * 1024);
  ASSERT_EQ(ReadBlockedThread(s.info, &capture), ProcReadStatus::kOk);
  EXPECT_EQ(capture.method, SampleMethod::kProc);
  EXPECT_EQ(capture.pause_ns, 0u);
  EXPECT_TRUE(capture.sched_state == 'S' || capture.sched_state == 'D');
  EXPECT_GT(capture.stack_size, 0u);
  Unwound u = UnwindCapture(*unwinder_, capture);
  if (kReadIsIntercepted && GetParam() == Kind::kRead) {
    GTEST_SKIP() << "read() is ASan's interceptor, kept by rbp, which /proc does not give";
  }
  // eu-stack on the same, unchanged state (the thread is still blocked): the same frames.
  std::string why;
  std::vector<uintptr_t> eu = EuStackPcs(s.info.tid, &why);
  std::string eu_text = "eu-stack:";
  for (uintptr_t pc : eu) eu_text += " " + std::to_string(pc);
  EXPECT_TRUE(HasChain(u.names, {"cfi_block_once", "cfi_blocked_caller"}))
      << u.ToString() << eu_text;
  EXPECT_NE(std::find(u.names.begin(), u.names.end(), "cfi_blocked_body"), u.names.end())
      << u.ToString();
  // The syscall wrapper has no frame record and /proc gives no fp: frame 1 comes from CFI.
  ASSERT_GE(u.methods.size(), 2u);
  EXPECT_EQ(u.methods[1], hangwatch::symbols::FrameMethod::kCfi) << u.ToString();

  // eu-stack reads the thread while it is ptrace-stopped in the same call (the stop itself
  // makes epoll_wait fail with EINTR afterwards, and nanosleep and poll continue in
  // restart_syscall: ptrace is not gentle; the /proc read is).
  if (eu.empty()) GTEST_SKIP() << why;
  const size_t n = std::min(eu.size(), u.pcs.size());
  ASSERT_GE(n, 4u);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(eu[i] == u.pcs[i] || eu[i] + 1 == u.pcs[i])
        << "frame " << i << " eu-stack 0x" << std::hex << eu[i] << "\nours:\n"
        << u.ToString();
  }
  // The /proc read and CFI reach at least as far as eu-stack's frames in user code.
  EXPECT_GE(u.pcs.size() + 1, eu.size()) << u.ToString();
}

TEST_P(ProcBlockedTest, ThousandSamplesCauseNoEintrAndShowTheCaller) {
  // read() would be restarted after a signal (SA_RESTART) anyway; it is here for the chain and
  // the /proc path being taken every time (the chain: not under ASan, kReadIsIntercepted).
  SignalSamplerOptions so;
  so.max_stack_bytes = 64 * 1024;
  so.timeout = std::chrono::seconds(2);
  std::string error;
  auto signal_sampler = SignalSampler::Create(so, &error);
  ASSERT_NE(signal_sampler, nullptr) << error;
  ProcFirstSampler sampler(signal_sampler.get());
  Sleeper s(GetParam());
  s.WaitSleeping();
  CaptureBuffer capture(256, 64 * 1024);
  int with_caller = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(sampler.Capture(s.info, &capture), CaptureStatus::kOk);
    Unwound u = UnwindCapture(*unwinder_, capture);
    if (HasChain(u.names, {"cfi_block_once", "cfi_blocked_caller"})) ++with_caller;
  }
  EXPECT_EQ(s.eintr.load(), 0);
  EXPECT_EQ(sampler.stats().proc_reads, 1000u);
  if (!(kReadIsIntercepted && GetParam() == Kind::kRead)) {
    EXPECT_EQ(with_caller, 1000);
  }
  EXPECT_EQ(s.calls.load(), 0) << "the thread never woke up";
}

INSTANTIATE_TEST_SUITE_P(Kinds, ProcBlockedTest,
                         ::testing::Values(Kind::kNanosleep, Kind::kEpollWait, Kind::kPoll,
                                           Kind::kFutex, Kind::kRead),
                         [](const auto& info) { return std::string(KindName(info.param)); });

// The counter above can fail: the signal itself makes nanosleep return EINTR.
TEST(ProcBlockedControl, SignalInterruptsNanosleep) {
  HW_TEST_SKIP_UNDER_TSAN();
  SignalSamplerOptions so;
  so.timeout = std::chrono::seconds(2);
  std::string error;
  auto sampler = SignalSampler::Create(so, &error);
  ASSERT_NE(sampler, nullptr) << error;
  Sleeper s(Kind::kNanosleep);
  s.WaitSleeping();
  CaptureBuffer capture(64, 0);
  ASSERT_EQ(sampler->Capture(s.info, &capture), CaptureStatus::kOk);
  while (s.calls.load() == 0) std::this_thread::yield();
  EXPECT_EQ(s.eintr.load(), 1);
}

TEST(ProcBlockedControl, RunningThreadIsNotReadThroughProc) {
  std::atomic<bool> stop{false};
  std::atomic<bool> ready{false};
  ThreadInfo info;
  std::thread t([&] {
    RegisterCurrentThread(&info);
    ready = true;
    while (!stop.load()) {
    }
  });
  while (!ready.load()) std::this_thread::yield();
  CaptureBuffer capture(64, 4096);
  ProcReadStatus st = ReadBlockedThread(info, &capture);
  stop = true;
  t.join();
  // A spinning thread is R (or, preempted on a busy machine, still R).
  EXPECT_EQ(st, ProcReadStatus::kNotBlocked);
}

}  // namespace
