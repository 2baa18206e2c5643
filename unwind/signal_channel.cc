#include "unwind/signal_channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "unwind/internal/task_file.h"
#include "unwind/proc_files.h"

namespace hangwatch::unwind::internal {
namespace {

// ---- the request word: seq (bits 3..31) | waiter (bit 2) | phase (bits 0..1) ----
constexpr uint32_t kPhaseMask = 0x3;
constexpr uint32_t kIdle = 0;
constexpr uint32_t kRequested = 1;
constexpr uint32_t kClaimed = 2;
constexpr uint32_t kDone = 3;  // == kClaimed + 1: the handler moves on with fetch_add(1)
constexpr uint32_t kWaiterBit = 0x4;
constexpr uint32_t kSeqShift = 3;

constexpr uint32_t Phase(uint32_t word) { return word & kPhaseMask; }
constexpr uint32_t Seq(uint32_t word) { return word >> kSeqShift; }

// Everything the handler reads lives in static storage, so that a signal arriving at any
// moment (even after the channel is gone) only ever touches valid memory.
struct ChannelState {
  std::atomic<uint32_t> word{0};
  std::atomic<pid_t> target_tid{0};
  std::atomic<bool> active{false};  // one channel per process
  // Diagnostics: signals that found no request of theirs, and requests answered.
  std::atomic<uint64_t> ignored{0};
  std::atomic<uint64_t> claimed{0};
  // Written while no request can be claimed (before the first request is published); read by
  // the handler only after it claimed a request, which synchronizes with that publication.
  SignalBody body = nullptr;
  void* arg = nullptr;
  pid_t pid = 0;
  uint32_t next_seq = 1;  // sampler side only
  // The installed signal and what it replaced, for ForgetAfterFork() (the channel object that
  // also holds them is out of reach there).
  int signal = 0;
  struct sigaction old_action {};
};
ChannelState g_state;

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// REQUESTED -> CLAIMED for the calling thread. The CAS may fail because the sampler set the
// waiter bit meanwhile (retry: same request) or moved on (give up: the sequence number or the
// phase changed). The sampler changes the word at most a few times per request, so this ends.
bool Claim() {
  uint32_t word = g_state.word.load(std::memory_order_acquire);
  if (Phase(word) != kRequested || g_state.target_tid.load(std::memory_order_relaxed) != gettid()) {
    return false;
  }
  const uint32_t seq = Seq(word);
  for (int attempt = 0; attempt < 16; ++attempt) {
    if (g_state.word.compare_exchange_weak(word, (word & ~kPhaseMask) | kClaimed,
                                           std::memory_order_acq_rel)) {
      return true;
    }
    if (Phase(word) != kRequested || Seq(word) != seq) {
      return false;
    }
  }
  return false;
}

void Handler(int /*signal*/, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // Only tgkill() from this process for the thread of the current request; anything else
  // (kill, sigqueue, another process, a stale signal of an abandoned request) is ignored.
  bool answered = false;
  if (info != nullptr && info->si_code == SI_TKILL && info->si_pid == g_state.pid) {
    if (Claim()) {
      g_state.body(g_state.arg, static_cast<const ucontext_t*>(context));
      g_state.claimed.fetch_add(1, std::memory_order_relaxed);
      const uint32_t before = g_state.word.fetch_add(kDone - kClaimed, std::memory_order_acq_rel);
      if ((before & kWaiterBit) != 0) {
        Futex(&g_state.word, FUTEX_WAKE_PRIVATE, 1, nullptr);
      }
      answered = true;
    }
  }
  if (!answered) {
    g_state.ignored.fetch_add(1, std::memory_order_relaxed);
  }
  errno = saved_errno;
}

// True when `signal` still runs Handler (sigaction() is async-signal-safe).
bool HandlerIsOurs(int signal) {
  struct sigaction now {};
  if (sigaction(signal, nullptr, &now) != 0) {
    return false;
  }
  return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == Handler;
}

bool IsFree(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) == 0 ? action.sa_handler == SIG_DFL
                                             : action.sa_sigaction == nullptr;
}

}  // namespace

uint64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool ThreadBlocksSignal(pid_t tid, int signal) {
  TaskFile status("status");
  char buf[4096];
  if (status.Read(tid, buf, sizeof(buf)) <= 0) {
    return false;
  }
  uint64_t mask = 0;
  if (!StatusMask(buf, "SigBlk", &mask) || signal < 1 || signal > 64) {
    return false;
  }
  return ((mask >> (signal - 1)) & 1u) != 0;
}

std::unique_ptr<SignalChannel> SignalChannel::Create(int signal, SignalBody body, void* arg,
                                                     std::string* error) {
  auto fail = [error](const std::string& why) -> std::unique_ptr<SignalChannel> {
    if (error != nullptr) {
      *error = why;
    }
    return nullptr;
  };
  if (body == nullptr) {
    return fail("SignalChannel: no handler body");
  }
  if (g_state.active.exchange(true, std::memory_order_acq_rel)) {
    return fail("another SignalSampler is already active in this process (one at a time)");
  }
  auto release_and_fail = [&](const std::string& why) {
    g_state.active.store(false, std::memory_order_release);
    return fail(why);
  };
  if (Phase(g_state.word.load(std::memory_order_acquire)) == kClaimed) {
    return release_and_fail(
        "a capture of a previous sampler is still running in a stopped thread; cannot reuse "
        "the signal state");
  }
  // A stale REQUESTED or DONE word of a previous channel is simply forgotten.
  g_state.word.store(g_state.next_seq++ << kSeqShift, std::memory_order_relaxed);
  g_state.body = body;
  g_state.arg = arg;
  g_state.pid = getpid();

  struct sigaction action {};
  action.sa_sigaction = Handler;
  // SA_RESTART: a read() or pthread_mutex_lock() interrupted by a capture resumes by itself.
  // SA_ONSTACK: a thread close to overflowing its stack may have an alternate one.
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&action.sa_mask);

  struct sigaction old {};
  auto try_install = [&](int sig, std::string* why) -> bool {
    if (sigaction(sig, nullptr, &old) != 0) {
      *why = "sigaction(" + std::to_string(sig) + ") failed: " + strerror(errno);
      return false;
    }
    if (!IsFree(old)) {
      *why = "signal " + std::to_string(sig) +
             " already has a handler (or is ignored); refusing to replace it";
      return false;
    }
    if (sigaction(sig, &action, &old) != 0) {
      *why = "sigaction(" + std::to_string(sig) + ") failed: " + strerror(errno);
      return false;
    }
    if (!IsFree(old)) {  // someone installed one in between: give it back
      sigaction(sig, &old, nullptr);
      *why = "signal " + std::to_string(sig) + " was taken while installing; restored it";
      return false;
    }
    // Probe that the signal can be sent at all: an emulator (qemu-user) accepts a handler for
    // real-time signals it cannot map to the host, then fails to send them (EINVAL). The probe
    // reaches our own handler, which finds no request and ignores it.
    if (syscall(SYS_tgkill, g_state.pid, gettid(), sig) != 0 && errno == EINVAL) {
      sigaction(sig, &old, nullptr);
      *why = "signal " + std::to_string(sig) + " cannot be sent in this environment (EINVAL)";
      return false;
    }
    return true;
  };

  std::string why;
  if (signal != 0) {
    if (signal < SIGRTMIN || signal > SIGRTMAX) {
      return release_and_fail("signal " + std::to_string(signal) +
                              " is not a real-time signal (SIGRTMIN=" + std::to_string(SIGRTMIN) +
                              ", SIGRTMAX=" + std::to_string(SIGRTMAX) + ")");
    }
    if (!try_install(signal, &why)) {
      return release_and_fail(why);
    }
  } else {
    // Highest first: applications and libraries usually take real-time signals from the bottom.
    for (signal = SIGRTMAX; signal >= SIGRTMIN; --signal) {
      if (try_install(signal, &why)) {
        break;
      }
    }
    if (signal < SIGRTMIN) {
      return release_and_fail(
          "no free real-time signal: every one from SIGRTMIN to SIGRTMAX has a handler or "
          "cannot be sent (last: " +
          why + ")");
    }
  }
  std::unique_ptr<SignalChannel> channel(new SignalChannel(signal));
  channel->old_action_ = old;
  g_state.signal = signal;
  g_state.old_action = old;
  return channel;
}

SignalChannel::~SignalChannel() {
  // No new request is published from here on. One that is only requested is withdrawn; one
  // that is claimed is waited for, within a bound (the body is bounded; only a thread stopped
  // in the middle of it can outlast this).
  uint32_t word = g_state.word.load(std::memory_order_acquire);
  if (Phase(word) == kRequested) {
    g_state.word.compare_exchange_strong(word, word & ~(kPhaseMask | kWaiterBit),
                                         std::memory_order_acq_rel);
  }
  const uint64_t deadline = MonotonicNowNs() + 100'000'000;  // 100 ms
  while (Phase(g_state.word.load(std::memory_order_acquire)) == kClaimed &&
         MonotonicNowNs() < deadline) {
    const timespec pause{0, 100'000};
    nanosleep(&pause, nullptr);
  }
  // The application replaced our handler: the signal is its own now; leave it as it is.
  if (HandlerIsOurs(signal_)) {
    // Setting SIG_IGN discards instances still pending in any thread (e.g. one that blocks the
    // signal); restoring SIG_DFL with them pending would kill the process once unblocked.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(signal_, &ignore, nullptr);
    sigaction(signal_, &old_action_, nullptr);
  }
  g_state.active.store(false, std::memory_order_release);
}

void SignalChannel::ForgetAfterFork() {
  if (!g_state.active.load(std::memory_order_acquire)) {
    return;
  }
  // Signals pending in the parent are not inherited by the child, so the old disposition can
  // be restored directly (unless the application has made the signal its own meanwhile).
  if (HandlerIsOurs(g_state.signal)) {
    sigaction(g_state.signal, &g_state.old_action, nullptr);
  }
  g_state.word.store(g_state.next_seq++ << kSeqShift, std::memory_order_relaxed);
  g_state.target_tid.store(0, std::memory_order_relaxed);
  g_state.signal = 0;
  g_state.active.store(false, std::memory_order_release);
}

uint64_t SignalChannel::SignalsIgnored() { return g_state.ignored.load(std::memory_order_relaxed); }

uint64_t SignalChannel::RequestsAnswered() {
  return g_state.claimed.load(std::memory_order_relaxed);
}

bool SignalChannel::CaptureInFlight() {
  return Phase(g_state.word.load(std::memory_order_acquire)) == kClaimed;
}

SignalChannel::Outcome SignalChannel::Prepare() {
  uint32_t word = g_state.word.load(std::memory_order_acquire);
  switch (Phase(word)) {
    case kClaimed:
      return Outcome::kBusy;  // an abandoned request is still being answered
    case kDone:               // ... and has finished since: its output is stale, drop it
    case kRequested:          // cannot happen between requests; withdraw it to be safe
      g_state.word.compare_exchange_strong(word, word & ~(kPhaseMask | kWaiterBit),
                                           std::memory_order_acq_rel);
      return Phase(g_state.word.load(std::memory_order_acquire)) == kIdle ? Outcome::kDone
                                                                          : Outcome::kBusy;
    default:
      return Outcome::kDone;
  }
}

SignalChannel::Outcome SignalChannel::Send(pid_t tid) {
  if (handler_replaced_ || !HandlerIsOurs(signal_)) {
    handler_replaced_ = true;
    return Outcome::kHandlerReplaced;
  }
  if (blocked_tid_known_ && tid == tid_) {
    // The last request to this thread found the signal blocked and left one instance pending;
    // don't queue more until it unblocks.
    if (ThreadBlocksSignal(tid, signal_)) {
      return Outcome::kSignalBlocked;
    }
    blocked_tid_known_ = false;
  }
  tid_ = tid;
  const uint32_t seq = g_state.next_seq++;
  g_state.target_tid.store(tid, std::memory_order_relaxed);
  g_state.word.store((seq << kSeqShift) | kRequested, std::memory_order_release);
  if (syscall(SYS_tgkill, g_state.pid, tid, signal_) != 0) {
    error_number_ = errno;
    uint32_t word = g_state.word.load(std::memory_order_acquire);
    if (Phase(word) == kRequested) {
      g_state.word.compare_exchange_strong(word, word & ~(kPhaseMask | kWaiterBit),
                                           std::memory_order_acq_rel);
    }
    return error_number_ == ESRCH ? Outcome::kThreadExited : Outcome::kError;
  }
  return Outcome::kDone;
}

namespace {

// Waits until the phase leaves `phase` or `deadline_ns` passes; returns the last word seen.
uint32_t WaitWhilePhase(uint32_t phase, uint64_t deadline_ns, uint64_t spin_until_ns) {
  uint32_t word = g_state.word.load(std::memory_order_acquire);
  // Spin first: the usual answer comes within microseconds, sooner than a futex round trip.
  while (Phase(word) == phase) {
    const uint64_t now = MonotonicNowNs();
    if (now >= spin_until_ns || now >= deadline_ns) {
      break;
    }
    for (int i = 0; i < 16; ++i) {
      CpuRelax();
    }
    word = g_state.word.load(std::memory_order_acquire);
  }
  while (Phase(word) == phase) {
    const uint64_t now = MonotonicNowNs();
    if (now >= deadline_ns) {
      break;
    }
    if ((word & kWaiterBit) == 0) {
      if (!g_state.word.compare_exchange_weak(word, word | kWaiterBit, std::memory_order_acq_rel)) {
        continue;  // word reloaded
      }
      word |= kWaiterBit;
    }
    const uint64_t left = deadline_ns - now;
    const timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                           static_cast<long>(left % 1'000'000'000)};
    Futex(&g_state.word, FUTEX_WAIT_PRIVATE, word, &timeout);
    word = g_state.word.load(std::memory_order_acquire);
  }
  return word;
}

}  // namespace

SignalChannel::Outcome SignalChannel::Wait(uint64_t deadline_ns, uint64_t claimed_grace_ns) {
  const uint64_t spin_until = MonotonicNowNs() + spin_ns_;
  uint32_t word = WaitWhilePhase(kRequested, deadline_ns, spin_until);
  if (Phase(word) == kRequested) {
    // Withdraw it. If the CAS loses, the handler has just claimed it: wait for that below.
    if (g_state.word.compare_exchange_strong(word, word & ~(kPhaseMask | kWaiterBit),
                                             std::memory_order_acq_rel)) {
      return Diagnose();
    }
  }
  if (Phase(word) == kClaimed) {
    word = WaitWhilePhase(kClaimed, deadline_ns, spin_until);
    if (Phase(word) == kClaimed) {
      // Claimed in time but not finished: the body is bounded, so give it a grace period.
      word = WaitWhilePhase(kClaimed, deadline_ns + claimed_grace_ns, 0);
    }
    if (Phase(word) == kClaimed) {
      return Outcome::kTimedOut;  // Prepare() says kBusy until done
    }
  }
  return Phase(word) == kDone ? Outcome::kDone : Outcome::kError;
}

void SignalChannel::Release() {
  uint32_t word = g_state.word.load(std::memory_order_acquire);
  if (Phase(word) == kDone) {
    g_state.word.compare_exchange_strong(word, word & ~(kPhaseMask | kWaiterBit),
                                         std::memory_order_acq_rel);
  }
}

SignalChannel::Outcome SignalChannel::Diagnose() {
  SchedStateFiles files;
  const char state = ReadSchedState(tid_, &files);
  // A thread that is exiting no longer takes signals; once gone, its /proc entry goes too.
  if (state == '?' || state == 'Z' || state == 'X') {
    return Outcome::kThreadExited;
  }
  if (ThreadBlocksSignal(tid_, signal_)) {
    blocked_tid_known_ = true;
    return Outcome::kSignalBlocked;
  }
  return Outcome::kTimedOut;
}

SignalChannel::Outcome SignalChannel::Request(pid_t tid, std::chrono::nanoseconds timeout) {
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(timeout.count());
  Outcome outcome = Prepare();
  if (outcome != Outcome::kDone) {
    return outcome;
  }
  outcome = Send(tid);
  if (outcome != Outcome::kDone) {
    return outcome;
  }
  return Wait(deadline, static_cast<uint64_t>(timeout.count()));
}

}  // namespace hangwatch::unwind::internal
