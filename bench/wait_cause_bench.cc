// The cost of naming a blocked sample's cause (agent/samplers/wait_cause_probe.h), side by side
// with the sample it follows, in one binary:
//
//   BM_Sample/blocked/plain    one capture of a thread asleep in nanosleep (ProcFirstSampler,
//                              as the agent samples a blocked main thread: /proc, 64 KiB stack)
//   BM_Sample/blocked/cause    the same plus the probe (system call decoded: a sleep)
//   BM_Sample/busy/plain       one capture of a spinning thread (the signal)
//   BM_Sample/busy/cause       the same, through the agent's gate (the probe runs only for a
//                              sample that found the thread asleep: S or D)
//   BM_Sample/lock/cause       a thread waiting for a std::mutex held by a sleeping owner: the
//                              capture, the probe, the lock's owner read and the owner captured
//                              by the same sampler
//   BM_Sample/ipc/plain        one capture of a thread asleep in read() on a pipe
//   BM_Sample/ipc/cause        the same plus the probe, in a hang whose first sample described
//                              the pipe (its other end's holders: a /proc scan): the next
//                              samples of the same system call line reuse it
//   BM_Sample/ipc/first        the same, each sample the first of a new hang (HangStarted: the
//                              pipe described again, the /proc scan each time)
//
// Targets (issue): blocked/cause and ipc/cause <= 1.25x their plain sample; busy unchanged;
// lock/cause <= 2x blocked/plain.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/samplers/wait_cause_probe.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/signal_sampler.h"

namespace {

using hangwatch::agent::WaitCause;
using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::ThreadInfo;

constexpr size_t kFrames = 64;
constexpr size_t kStackBytes = 64 * 1024;

std::atomic<bool> g_stop{false};
volatile uint64_t g_spin;

// A thread doing `body` until g_stop, registered for capture.
struct Subject {
  ThreadInfo info;
  std::atomic<bool> ready{false};
  std::thread thread;
  template <typename F>
  explicit Subject(F body) {
    thread = std::thread([this, body] {
      hangwatch::unwind::RegisterCurrentThread(&info);
      ready = true;
      body();
    });
    while (!ready) std::this_thread::yield();
  }
  ~Subject() { thread.join(); }
};

void SleepUntilStop() {
  while (!g_stop) {
    timespec ts{0, 50'000'000};
    nanosleep(&ts, nullptr);
  }
}

// Until `info`'s thread is asleep (the /proc read succeeds).
void WaitAsleep(const ThreadInfo& info) {
  for (;;) {
    CaptureBuffer probe(4, 0);
    if (hangwatch::unwind::ReadBlockedThread(info, &probe) ==
        hangwatch::unwind::ProcReadStatus::kOk) {
      return;
    }
    std::this_thread::yield();
  }
}

// The owner's capture, as the agent's monitor does it (its own sampler; an owner asleep since
// its last capture reuses it), without the CFI pass, as the plain sample here has none either.
class Capturer final : public hangwatch::agent::OtherThreadCapturer {
 public:
  explicit Capturer(hangwatch::agent::OwnerSampler* s) : sampler_(s) {}
  size_t CaptureOther(const ThreadInfo& thread, uintptr_t* frames, hangwatch::FrameMethod* methods,
                      size_t max_frames, hangwatch::agent::SampledThread* sampled) override {
    const bool again = captured_ == thread.tid && sampler_->UnchangedSinceLastRead(thread);
    *sampled = hangwatch::agent::SampledThread{};
    if (!again) {
      captured_ = 0;
      const CaptureStatus status = sampler_->Capture(thread, &buffer_);
      sampled->state = buffer_.sched_state;
      if (status != CaptureStatus::kOk) return 0;
      if (buffer_.method == hangwatch::SampleMethod::kProc) captured_ = thread.tid;
    }
    sampled->state = buffer_.sched_state;
    sampled->syscall_known = buffer_.syscall_known;
    sampled->syscall_nr = buffer_.syscall_nr;
    sampled->syscall_args = buffer_.syscall_args;
    sampled->sp = buffer_.regs.sp;
    const size_t n = std::min(buffer_.num_frames, max_frames);
    std::copy_n(buffer_.frames(), n, frames);
    std::fill_n(methods, n, hangwatch::FrameMethod::kPc);
    return n;
  }

 private:
  hangwatch::agent::OwnerSampler* sampler_;
  CaptureBuffer buffer_{kFrames, kStackBytes};
  pid_t captured_ = 0;
};

enum class Kind { kBlocked, kBusy, kLock, kPipe };

void BM_Sample(benchmark::State& state, Kind kind, bool with_cause, bool new_hang = false) {
  g_stop = false;
  std::string error;
  hangwatch::unwind::SignalSamplerOptions so;
  so.timeout = std::chrono::seconds(1);
  auto signal = hangwatch::unwind::SignalSampler::Create(so, &error);
  if (signal == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  hangwatch::unwind::ProcFirstSampler sampler(signal.get());
  auto probe = hangwatch::agent::MakeLinuxWaitCauseProbe();
  // As the agent: the owners have their own sampler, over the same signal sampler.
  auto other_sampler = hangwatch::agent::MakeLinuxOwnerSampler(signal.get());
  Capturer capturer(other_sampler.get());
  std::mutex m;
  std::atomic<bool> owner_holds{false};
  std::unique_ptr<Subject> owner;
  if (kind == Kind::kLock) {
    owner = std::make_unique<Subject>([&] {
      std::lock_guard<std::mutex> g(m);
      owner_holds = true;
      SleepUntilStop();
    });
    while (!owner_holds) std::this_thread::yield();
  }
  int pipe_fds[2] = {-1, -1};
  if (kind == Kind::kPipe && pipe(pipe_fds) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  // Closed after the subject has ended (destroyed after it).
  struct PipeCloser {
    int* fds;
    ~PipeCloser() {
      if (fds[0] >= 0) close(fds[0]);
      if (fds[1] >= 0) close(fds[1]);
    }
  } closer{pipe_fds};
  Subject subject([&] {
    if (kind == Kind::kPipe) {
      char c;
      (void)!read(pipe_fds[0], &c, 1);  // until the end: a byte written
    } else if (kind == Kind::kBusy) {
      while (!g_stop) g_spin = g_spin + 1;
    } else if (kind == Kind::kLock) {
      std::lock_guard<std::mutex> g(m);
    } else {
      SleepUntilStop();
    }
  });
  if (kind != Kind::kBusy) WaitAsleep(subject.info);
  CaptureBuffer buffer(kFrames, kStackBytes);
  WaitCause cause;
  uint64_t failed = 0;
  uint64_t owners = 0;
  probe->HangStarted(subject.info);
  for (auto _ : state) {
    if (new_hang) probe->HangStarted(subject.info);
    if (sampler.Capture(subject.info, &buffer) != CaptureStatus::kOk) ++failed;
    const char s = buffer.sched_state;
    if (with_cause && (s == 'S' || s == 'D')) {
      hangwatch::agent::SampledThread sampled;
      sampled.state = s;
      sampled.syscall_known = buffer.syscall_known;
      sampled.syscall_nr = buffer.syscall_nr;
      sampled.syscall_args = buffer.syscall_args;
      probe->Probe(subject.info, sampled, &capturer, &cause);
      owners += cause.num_threads > 0 && cause.threads[0].num_frames > 0;
    }
    benchmark::DoNotOptimize(cause);
  }
  g_stop = true;
  if (kind == Kind::kPipe) {
    (void)!write(pipe_fds[1], "x", 1);
  }
  state.counters["failed"] = static_cast<double>(failed);
  if (kind == Kind::kLock) {
    state.counters["owner_captured"] =
        benchmark::Counter(static_cast<double>(owners), benchmark::Counter::kAvgIterations);
  }
}

BENCHMARK_CAPTURE(BM_Sample, blocked_plain, Kind::kBlocked, false)->Name("BM_Sample/blocked/plain");
BENCHMARK_CAPTURE(BM_Sample, blocked_cause, Kind::kBlocked, true)->Name("BM_Sample/blocked/cause");
BENCHMARK_CAPTURE(BM_Sample, busy_plain, Kind::kBusy, false)->Name("BM_Sample/busy/plain");
BENCHMARK_CAPTURE(BM_Sample, busy_cause, Kind::kBusy, true)->Name("BM_Sample/busy/cause");
BENCHMARK_CAPTURE(BM_Sample, lock_cause, Kind::kLock, true)->Name("BM_Sample/lock/cause");
BENCHMARK_CAPTURE(BM_Sample, ipc_plain, Kind::kPipe, false)->Name("BM_Sample/ipc/plain");
BENCHMARK_CAPTURE(BM_Sample, ipc_cause, Kind::kPipe, true)->Name("BM_Sample/ipc/cause");
BENCHMARK_CAPTURE(BM_Sample, ipc_first, Kind::kPipe, true, true)->Name("BM_Sample/ipc/first");

}  // namespace

BENCHMARK_MAIN();
