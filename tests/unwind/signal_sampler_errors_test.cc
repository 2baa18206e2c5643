// SignalSampler's failure modes: each returns a clear status in bounded time and leaves nothing
// half-written; the application's own signal handlers are never replaced.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/unwind/target_thread.h"
#include "unwind/signal_channel.h"
#include "unwind/signal_sampler.h"

using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::CaptureStatusName;
using hangwatch::unwind::RegisterCurrentThread;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::ThreadInfo;
using hangwatch::unwind::internal::SignalChannel;
using hangwatch::unwind::testing::TargetThread;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<SignalSampler> MakeSampler(SignalSamplerOptions options = {}) {
  std::string error;
  auto sampler = SignalSampler::Create(options, &error);
  EXPECT_NE(sampler, nullptr) << error;
  return sampler;
}

bool TaskExists(pid_t tid) {
  struct stat st;
  return stat(("/proc/self/task/" + std::to_string(tid)).c_str(), &st) == 0;
}

// Bounded time means "about the timeout", not "some day": generous slack for loaded machines.
constexpr auto kSlack = std::chrono::seconds(1);

// For the tests that also expect a successful capture: a timeout that a loaded machine (a
// spinning target waiting tens of ms for a CPU) does not reach by accident.
SignalSamplerOptions WithTimeout(std::chrono::milliseconds timeout) {
  SignalSamplerOptions options;
  options.timeout = timeout;
  return options;
}
constexpr std::chrono::milliseconds kLongTimeout(250);

// Whether /proc shows `tid` blocking `sig`. Under an emulator (qemu-user) the guest's signal
// mask lives in the emulator, not in the kernel: then the sampler cannot tell a blocked thread
// from a slow one, and the tests that need the distinction are skipped.
bool KernelSeesTheBlock(pid_t tid, int sig) {
  return hangwatch::unwind::internal::ThreadBlocksSignal(tid, sig);
}

// The scheduler state letter of a thread of this process, '?' if gone.
char SchedState(pid_t tid) {
  FILE* f = fopen(("/proc/self/task/" + std::to_string(tid) + "/stat").c_str(), "r");
  if (f == nullptr) {
    return '?';
  }
  char line[512] = {0};
  char state = '?';
  if (fgets(line, sizeof(line), f) != nullptr) {
    const char* close = strrchr(line, ')');
    if (close != nullptr && close[1] == ' ') {
      state = close[2];
    }
  }
  fclose(f);
  return state;
}

TEST(SignalSamplerErrorsTest, ExitedAndJoinedThread) {
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  ThreadInfo info;
  std::thread([&] { ASSERT_TRUE(RegisterCurrentThread(&info)); }).join();
  CaptureBuffer buffer(64, 4096);
  const auto start = Clock::now();
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kThreadExited);
  EXPECT_LT(Clock::now() - start, SignalSamplerOptions{}.timeout + kSlack);
  EXPECT_EQ(buffer.num_frames, 0u);
}

TEST(SignalSamplerErrorsTest, ExitedButNotYetJoinedThread) {
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  ThreadInfo info;
  std::atomic<bool> registered{false};
  std::thread thread([&] {
    RegisterCurrentThread(&info);
    registered.store(true);
  });
  hangwatch::unwind::testing::SpinUntil(registered);
  // The task disappears from /proc once the kernel has released it, joined or not.
  while (TaskExists(info.tid)) {
    sched_yield();
  }
  CaptureBuffer buffer(64, 4096);
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kThreadExited);
  thread.join();
}

// A process whose main thread has exited keeps it as a zombie (state Z) while other
// threads run: signals to it are never handled. Run in a child process (the test runner's own
// main thread must not exit); the child reports the status through its exit code.
TEST(SignalSamplerErrorsTest, ZombieMainThreadOfAChildProcess) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    static ThreadInfo main_info;
    if (!RegisterCurrentThread(&main_info)) {
      _exit(100);
    }
    std::thread([] {
      while (true) {  // wait for the main thread to become a zombie
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", main_info.tid);
        FILE* f = fopen(path, "r");
        char state = '?';
        if (f != nullptr) {
          char line[512] = {0};
          if (fgets(line, sizeof(line), f) != nullptr) {
            const char* close = strrchr(line, ')');
            if (close != nullptr && close[1] == ' ') {
              state = close[2];
            }
          }
          fclose(f);
        }
        if (state == 'Z' || state == '?') {
          break;
        }
        sched_yield();
      }
      std::string error;
      auto sampler = SignalSampler::Create({}, &error);
      if (sampler == nullptr) {
        _exit(101);
      }
      CaptureBuffer buffer(64, 4096);
      _exit(static_cast<int>(sampler->Capture(main_info, &buffer)));
    }).detach();
    // Not pthread_exit(): its forced unwinding would meet the test runner's catch blocks. The
    // raw system call ends just this thread.
    syscall(SYS_exit, 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), static_cast<int>(CaptureStatus::kThreadExited))
      << CaptureStatusName(static_cast<CaptureStatus>(WEXITSTATUS(status)));
}

TEST(SignalSamplerErrorsTest, ThreadBlockingTheSignal) {
  auto sampler = MakeSampler(WithTimeout(kLongTimeout));
  ASSERT_NE(sampler, nullptr);
  const int sig = sampler->signal_number();
  std::atomic<bool> unblock{false};
  std::atomic<bool> unblocked{false};
  TargetThread target([&](TargetThread* t) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    t->SignalReady();
    while (!unblock.load()) {
      sched_yield();
    }
    // The pending instance is delivered before pthread_sigmask returns.
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    unblocked.store(true);
    while (!t->ShouldStop()) {
      sched_yield();
    }
  });
  const ThreadInfo& info = target.WaitReady();
  if (!KernelSeesTheBlock(info.tid, sig)) {
    unblock.store(true);
    GTEST_SKIP() << "SigBlk in /proc does not show the thread's signal mask (emulator?)";
  }
  CaptureBuffer buffer(64, 4096);
  auto start = Clock::now();
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kSignalBlocked);
  EXPECT_LT(Clock::now() - start, kLongTimeout + kSlack);
  // Known blocked: answered from /proc without queueing one more signal, so without waiting.
  start = Clock::now();
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kSignalBlocked);
  EXPECT_LT(Clock::now() - start, kLongTimeout);

  const auto before = SignalSampler::stats();
  unblock.store(true);
  hangwatch::unwind::testing::SpinUntil(unblocked);
  // The stale instance found no request: ignored, nothing written.
  const auto after = SignalSampler::stats();
  EXPECT_EQ(after.requests_answered, before.requests_answered);
  EXPECT_EQ(after.signals_ignored, before.signals_ignored + 1);
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kOk);
}

TEST(SignalSamplerErrorsTest, PendingSignalIsDiscardedWhenTheSamplerGoes) {
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  const int sig = sampler->signal_number();
  std::atomic<bool> unblock{false};
  std::atomic<bool> unblocked{false};
  TargetThread target([&](TargetThread* t) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    t->SignalReady();
    while (!unblock.load()) {
      sched_yield();
    }
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    unblocked.store(true);
  });
  const ThreadInfo& info = target.WaitReady();
  if (!KernelSeesTheBlock(info.tid, sig)) {
    unblock.store(true);
    GTEST_SKIP() << "SigBlk in /proc does not show the thread's signal mask (emulator?)";
  }
  CaptureBuffer buffer(64, 4096);
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kSignalBlocked);
  sampler.reset();  // disposition back to SIG_DFL, which would kill the process if still pending
  struct sigaction action;
  ASSERT_EQ(sigaction(sig, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, SIG_DFL);
  unblock.store(true);
  hangwatch::unwind::testing::SpinUntil(unblocked);  // still alive
}

// A thread in vfork() waits, uninterruptibly, for its child: it takes no signal until the child
// exits. That is the "does not answer" case. The late signal must not write anything.
TEST(SignalSamplerErrorsTest, ThreadThatDoesNotAnswerTimesOut) {
  SignalSamplerOptions options;
  options.timeout = std::chrono::milliseconds(20);
  auto sampler = MakeSampler(options);
  ASSERT_NE(sampler, nullptr);
  int release[2];
  ASSERT_EQ(pipe(release), 0);
  std::atomic<bool> released{false};
  std::atomic<bool> parent_not_suspended{false};
  TargetThread target([&](TargetThread* t) {
    t->SignalReady();
    const pid_t child = vfork();
    if (child == 0) {
      char c;
      // The child shares our memory and stack until it exits: only raw system calls here.
      syscall(SYS_read, release[0], &c, 1);
      syscall(SYS_exit, 0);
    }
    // With a real vfork() we get here only after the child has exited, i.e. after the test
    // released it. An emulator (qemu-user runs vfork as fork) returns at once.
    if (child > 0 && !released.load()) {
      parent_not_suspended.store(true);
    }
    if (child > 0) {
      waitpid(child, nullptr, 0);
    }
  });
  // Whatever happens below, release the child so that the thread can be joined.
  struct Release {
    int fd;
    ~Release() { (void)!write(fd, "x", 1); }
  } release_on_exit{release[1]};
  const ThreadInfo& info = target.WaitReady();
  CaptureBuffer buffer(64, 4096);
  // Wait for the thread to be inside vfork(), waiting for its child: state D.
  while (SchedState(info.tid) != 'D') {
    if (parent_not_suspended.load()) {
      GTEST_SKIP() << "vfork() does not suspend the parent here (an emulator running it as "
                      "fork?): no thread to time out on";
    }
    sched_yield();
  }
  const auto start = Clock::now();
  buffer.Reset();
  buffer.num_frames = 12345;  // a marker: nothing may touch the caller's buffer after a timeout
  EXPECT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kTimedOut);
  EXPECT_LT(Clock::now() - start, options.timeout + kSlack);
  EXPECT_EQ(buffer.num_frames, 12345u);

  const auto before = SignalSampler::stats();
  released.store(true);
  ASSERT_EQ(write(release[1], "x", 1), 1);
  target.Join();  // the thread has taken the stale signals by the time it exits
  const auto after = SignalSampler::stats();
  EXPECT_EQ(after.requests_answered, before.requests_answered);
  EXPECT_GE(after.signals_ignored, before.signals_ignored + 1);
  EXPECT_EQ(buffer.num_frames, 12345u);
  close(release[0]);
  close(release[1]);
}

// ---- a claimed request that outlives the timeout: kBusy until it finishes ----
std::atomic<bool> g_body_entered{false};
std::atomic<bool> g_release_body{false};
void SlowBody(void*, const ucontext_t*) {
  g_body_entered.store(true);
  while (!g_release_body.load()) {
  }
}

TEST(SignalSamplerErrorsTest, ClaimedButUnfinishedRequestMakesTheNextOneBusy) {
  HW_TEST_SKIP_UNDER_TSAN();
  std::string error;
  auto channel = SignalChannel::Create(0, &SlowBody, nullptr, &error);
  ASSERT_NE(channel, nullptr) << error;
  TargetThread target([](TargetThread* t) {
    t->SignalReady();
    while (!t->ShouldStop()) {
      sched_yield();
    }
  });
  const ThreadInfo& info = target.WaitReady();
  const auto timeout = std::chrono::milliseconds(5);
  // The first request that the target claims stays in its handler past timeout and grace. (On
  // a loaded machine the target may not even claim within 5 ms: that request is withdrawn, and
  // the next one tries again.)
  SignalChannel::Outcome outcome = SignalChannel::Outcome::kTimedOut;
  for (int i = 0; i < 1000 && !g_body_entered.load(); ++i) {
    outcome = channel->Request(info.tid, timeout);
  }
  EXPECT_EQ(outcome, SignalChannel::Outcome::kTimedOut);
  EXPECT_TRUE(g_body_entered.load());
  EXPECT_TRUE(SignalChannel::CaptureInFlight());
  EXPECT_EQ(channel->Request(info.tid, timeout), SignalChannel::Outcome::kBusy);
  g_release_body.store(true);
  while (SignalChannel::CaptureInFlight()) {
    sched_yield();
  }
  EXPECT_EQ(channel->Request(info.tid, std::chrono::seconds(2)), SignalChannel::Outcome::kDone);
  channel->Release();
}

// ---- signal ownership ----
std::atomic<int> g_app_handler_calls{0};
void AppHandler(int) { g_app_handler_calls.fetch_add(1); }

class AppSignal {
 public:
  explicit AppSignal(int sig) : sig_(sig) {
    struct sigaction action {};
    action.sa_handler = AppHandler;
    sigemptyset(&action.sa_mask);
    sigaction(sig_, &action, &old_);
  }
  ~AppSignal() { sigaction(sig_, &old_, nullptr); }

 private:
  int sig_;
  struct sigaction old_ {};
};

TEST(SignalSamplerErrorsTest, RefusesASignalThatHasAHandler) {
  const int sig = SIGRTMIN + 2;
  AppSignal app(sig);
  SignalSamplerOptions options;
  options.signal = sig;
  std::string error;
  EXPECT_EQ(SignalSampler::Create(options, &error), nullptr);
  EXPECT_NE(error.find("already has a handler"), std::string::npos) << error;
  struct sigaction action;
  ASSERT_EQ(sigaction(sig, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, &AppHandler);
  const int calls = g_app_handler_calls.load();
  raise(sig);
  EXPECT_EQ(g_app_handler_calls.load(), calls + 1);
  // The failed attempt did not take the process-wide slot.
  EXPECT_NE(MakeSampler(), nullptr);
}

TEST(SignalSamplerErrorsTest, PicksTheHighestFreeSignalAndRestoresItsDisposition) {
  // The highest usable signal (SIGRTMAX on a kernel; lower under an emulator that cannot send
  // the top ones). Once the application takes it, the sampler goes below it.
  int highest = 0;
  {
    auto sampler = MakeSampler();
    ASSERT_NE(sampler, nullptr);
    highest = sampler->signal_number();
  }
  EXPECT_LE(highest, SIGRTMAX);
  AppSignal app(highest);
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  const int sig = sampler->signal_number();
  EXPECT_EQ(sig, highest - 1);
  struct sigaction action;
  ASSERT_EQ(sigaction(sig, nullptr, &action), 0);
  EXPECT_NE(action.sa_sigaction, nullptr);
  EXPECT_NE(action.sa_flags & SA_RESTART, 0);
  sampler.reset();
  ASSERT_EQ(sigaction(sig, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, SIG_DFL);
  ASSERT_EQ(sigaction(highest, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, &AppHandler);
}

TEST(SignalSamplerErrorsTest, FailsClearlyWhenNoRealTimeSignalIsFree) {
  std::vector<std::unique_ptr<AppSignal>> all;
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
    all.push_back(std::make_unique<AppSignal>(sig));
  }
  std::string error;
  EXPECT_EQ(SignalSampler::Create({}, &error), nullptr);
  EXPECT_NE(error.find("no free real-time signal"), std::string::npos) << error;
}

TEST(SignalSamplerErrorsTest, RejectsANonRealTimeSignal) {
  SignalSamplerOptions options;
  options.signal = SIGUSR1;
  std::string error;
  EXPECT_EQ(SignalSampler::Create(options, &error), nullptr);
  EXPECT_NE(error.find("not a real-time signal"), std::string::npos) << error;
}

TEST(SignalSamplerErrorsTest, OnlyOneSamplerPerProcess) {
  auto first = MakeSampler();
  ASSERT_NE(first, nullptr);
  std::string error;
  EXPECT_EQ(SignalSampler::Create({}, &error), nullptr);
  EXPECT_NE(error.find("already active"), std::string::npos) << error;
  first.reset();
  EXPECT_NE(MakeSampler(), nullptr);
}

// The sampler keeps /proc/self/task/TID/stat open between captures. An application that closes
// descriptors it does not own, then gets the same number for a file of its own, must find that
// file untouched: not read as ours, not closed.
// The sampler keeps the target's /proc files open between captures (unwind/internal/task_file.h);
// for a running target that is .../syscall, whose "running" gives state R.
TEST(SignalSamplerErrorsTest, ReusedProcDescriptorIsNeitherReadNorClosed) {
  auto sampler = MakeSampler(WithTimeout(kLongTimeout * 8));
  ASSERT_NE(sampler, nullptr);
  TargetThread target([](TargetThread* t) {
    t->SignalReady();
    while (!t->ShouldStop()) {
      sched_yield();
    }
  });
  const ThreadInfo& info = target.WaitReady();
  CaptureBuffer buffer(64, 4096);
  ASSERT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kOk);
  // Find the sampler's descriptor and take its number over.
  const std::string task_dir =
      "/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(info.tid) + "/";
  int stat_fd = -1;
  for (int fd = 0; fd < 1024 && stat_fd < 0; ++fd) {
    char link[256];
    const ssize_t n =
        readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof(link) - 1);
    const std::string target_path(link, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (target_path == task_dir + "syscall" || target_path == task_dir + "stat") {
      stat_fd = fd;
    }
  }
  ASSERT_GE(stat_fd, 0) << "the sampler's /proc descriptor was not found";
  ASSERT_EQ(close(stat_fd), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int app_fd = fds[0] == stat_fd ? fds[0] : dup2(fds[0], stat_fd);
  ASSERT_EQ(app_fd, stat_fd);

  ASSERT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kOk);
  EXPECT_NE(buffer.sched_state, '?');
  sampler.reset();
  // Still the application's pipe: open, and a byte written to the pipe comes out of it.
  ASSERT_EQ(write(fds[1], "z", 1), 1);
  char c = 0;
  EXPECT_EQ(read(app_fd, &c, 1), 1);
  EXPECT_EQ(c, 'z');
  close(fds[1]);
  if (fds[0] != app_fd) {
    close(fds[0]);
  }
  close(app_fd);
}

// Signals that are not this sampler's tgkill for the current request do nothing. kill() and
// sigqueue() to our own process, and tgkill() to the calling thread, are all handled before
// the call returns (the calling thread does not block the signal), so the counters are exact.
TEST(SignalSamplerErrorsTest, StraySignalsAreIgnored) {
  HW_TEST_SKIP_UNDER_TSAN();
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  const int sig = sampler->signal_number();
  const auto before = SignalSampler::stats();
  ASSERT_EQ(kill(getpid(), sig), 0);                           // SI_USER
  ASSERT_EQ(sigqueue(getpid(), sig, sigval{42}), 0);           // SI_QUEUE
  ASSERT_EQ(syscall(SYS_tgkill, getpid(), gettid(), sig), 0);  // SI_TKILL, but no request
  const auto after = SignalSampler::stats();
  EXPECT_EQ(after.signals_ignored, before.signals_ignored + 3);
  EXPECT_EQ(after.requests_answered, before.requests_answered);
}

}  // namespace
