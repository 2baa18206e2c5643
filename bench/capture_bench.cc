// Capture cost, hangwatch against its peers, in one run.
//
// A target thread recurses to a given depth, then spins in a tight loop that reads the clock.
// The benchmark (sampling) thread captures it over and over. Every peer uses the same
// request / acknowledge machinery as hangwatch (unwind/signal_channel.h: tgkill, SI_TKILL +
// si_pid + sequence-number check, atomic claim, spin-then-futex wait); only what runs inside
// the handler differs:
//   empty_handler    nothing: the floor set by the kernel and the protocol
//   hangwatch        SignalSampler::Capture(): registers, frame-pointer walk, stack copy, and on
//                    the sampling side the scheduler state (/proc) and CPU time
//   hangwatch_no_proc  the same with SignalSamplerOptions::read_sched_state = false
//   glibc_backtrace  backtrace()
//   libunwind        unw_init_local2(UNW_INIT_SIGNAL_FRAME) on the handler's ucontext + unw_step
//   absl             absl::GetStackTraceWithContext()
// Time is the round trip seen by the sampling thread (real time). Counter pause_ns is the time
// stolen from the target per capture (mean), measured on the target's side: the excess over the
// loop's normal period of every iteration during which a capture was answered. On a shared,
// loaded machine, preemption inflates means; the medians rtt_p50_ns and pause_p50_ns are the
// robust numbers.
#include <benchmark/benchmark.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/debugging/stacktrace.h"
#include "unwind/signal_channel.h"
#include "unwind/signal_sampler.h"

#if __has_include(<libunwind.h>)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define HW_BENCH_HAVE_LIBUNWIND 1
#endif

namespace {

using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::RegisterCurrentThread;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::ThreadInfo;
using hangwatch::unwind::internal::SignalBody;
using hangwatch::unwind::internal::SignalChannel;

constexpr int kMaxFrames = 256;  // every unwinder stops there, like hangwatch's default
// Generous, for every peer alike: on a loaded machine the target can be descheduled for longer
// than the production default, and this measures cost, not timeouts.
constexpr std::chrono::seconds kTimeout(1);

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// How long the sampling side spins before sleeping on the futex; the same for every peer.
// HANGWATCH_BENCH_SPIN_NS overrides the default (for tuning).
uint64_t SpinNs() {
  const char* env = getenv("HANGWATCH_BENCH_SPIN_NS");
  return env != nullptr
             ? strtoull(env, nullptr, 10)
             : static_cast<uint64_t>(std::chrono::nanoseconds(SignalSamplerOptions{}.spin).count());
}

// With two or more CPUs, the sampling thread and the target are pinned to different ones, so
// that a spinning sampler never keeps the target off its CPU (on a loaded machine the scheduler
// would otherwise sometimes queue them on the same one), for every peer alike.
bool PinTo(int cpu_from_end) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
    return false;
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) {
      cpus.push_back(c);
    }
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[cpus.size() - 1 - static_cast<size_t>(cpu_from_end)], &one);
  return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
}

// ---- the target ----
constexpr size_t kMaxSamples = 1 << 21;

uint64_t MedianOf(std::vector<uint64_t> values) {
  if (values.empty()) {
    return 0;
  }
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

class Target {
 public:
  explicit Target(int depth) : depth_(depth), stolen_(kMaxSamples) {
    thread_ = std::thread([this] {
      PinTo(0);
      RegisterCurrentThread(&info_);
      Recurse(depth_);
    });
    while (!ready_.load(std::memory_order_acquire)) {
      std::this_thread::yield();
    }
  }
  ~Target() {
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }
  const ThreadInfo& info() const { return info_; }

  // Waits until the target has noticed every answered capture, so that its record is complete.
  void Settle() const {
    while (observed_.load(std::memory_order_acquire) != SignalChannel::RequestsAnswered()) {
      std::this_thread::yield();
    }
  }
  // Forgets what was recorded so far (call between captures).
  void Reset() {
    Settle();
    base_ = recorded_.load(std::memory_order_acquire);
  }
  // Time stolen per capture since Reset(): mean and median.
  void Stolen(uint64_t* mean, uint64_t* median) const {
    Settle();
    const size_t end = std::min<size_t>(recorded_.load(std::memory_order_acquire), kMaxSamples);
    std::vector<uint64_t> values(stolen_.begin() + static_cast<std::ptrdiff_t>(base_),
                                 stolen_.begin() + static_cast<std::ptrdiff_t>(end));
    uint64_t sum = 0;
    for (uint64_t v : values) {
      sum += v;
    }
    *mean = values.empty() ? 0 : sum / values.size();
    *median = MedianOf(std::move(values));
  }

 private:
  __attribute__((noinline)) int Recurse(int depth) {
    volatile int keep_frame = depth;
    if (depth <= 1) {
      Spin();
      return keep_frame;
    }
    const int r = Recurse(depth - 1);
    asm volatile("" : : "r"(r) : "memory");
    return r + keep_frame;
  }

  // The clock-reading loop. Its normal period is calibrated first (median of many
  // iterations); afterwards each capture answered (the handler counter moved) records the
  // excess of the loop iterations around it over that period as the time it stole.
  __attribute__((noinline)) void Spin() {
    std::vector<uint64_t> periods;
    periods.reserve(100'000);
    uint64_t prev = NowNs();
    for (int i = 0; i < 100'000; ++i) {
      const uint64_t now = NowNs();
      periods.push_back(now - prev);
      prev = now;
    }
    const uint64_t period = MedianOf(std::move(periods));
    uint64_t answered = SignalChannel::RequestsAnswered();
    observed_.store(answered, std::memory_order_release);
    ready_.store(true, std::memory_order_release);

    // The counter is read before the clock: a capture answered between the two readings of
    // iteration k shows in gap k but is noticed at k + 1; one answered after the clock
    // reading shows in gap k + 1 and is noticed there too. So a capture noticed at k + 1 is
    // charged the excess of both gaps (one of them is normally just the period).
    prev = NowNs();
    uint64_t prev_excess = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      const uint64_t answered_now = SignalChannel::RequestsAnswered();
      const uint64_t now = NowNs();
      const uint64_t gap = now - prev;
      const uint64_t excess = gap > period ? gap - period : 0;
      if (answered_now != answered) {
        const size_t i = recorded_.load(std::memory_order_relaxed);
        if (i < kMaxSamples) {
          stolen_[i] = (prev_excess + excess) / (answered_now - answered);
        }
        recorded_.store(i + 1, std::memory_order_release);
        answered = answered_now;
        observed_.store(answered, std::memory_order_release);
      }
      prev_excess = excess;
      prev = now;
    }
  }

  int depth_;
  ThreadInfo info_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> observed_{0};
  std::atomic<size_t> recorded_{0};
  size_t base_ = 0;
  std::vector<uint64_t> stolen_;
  std::thread thread_;
};

// Round trips seen by the sampling thread, for the median.
class RoundTrips {
 public:
  RoundTrips() { values_.reserve(kMaxSamples); }
  void Add(uint64_t ns) {
    if (values_.size() < kMaxSamples) {
      values_.push_back(ns);
    }
  }
  uint64_t Median() const { return MedianOf(values_); }

 private:
  std::vector<uint64_t> values_;
};

void Report(benchmark::State& state, const Target& target, const RoundTrips& round_trips) {
  uint64_t mean = 0;
  uint64_t median = 0;
  target.Stolen(&mean, &median);
  state.counters["pause_ns"] = static_cast<double>(mean);
  state.counters["pause_p50_ns"] = static_cast<double>(median);
  state.counters["rtt_p50_ns"] = static_cast<double>(round_trips.Median());
}

// ---- peer handler bodies ----
struct PeerOutput {
  void* frames[kMaxFrames];
  int num_frames = 0;
  uint64_t body_ns = 0;  // duration of the body, measured around it in the handler
};

// Times a peer's body inside the handler, as hangwatch's handler times its own (handler_ns).
template <SignalBody kBody>
void Timed(void* arg, const ucontext_t* context) {
  const uint64_t start = NowNs();
  kBody(arg, context);
  static_cast<PeerOutput*>(arg)->body_ns = NowNs() - start;
}

void EmptyBody(void*, const ucontext_t*) {}

void GlibcBacktraceBody(void* arg, const ucontext_t*) {
  auto* out = static_cast<PeerOutput*>(arg);
  out->num_frames = backtrace(out->frames, kMaxFrames);
}

void AbslBody(void* arg, const ucontext_t* context) {
  auto* out = static_cast<PeerOutput*>(arg);
  int dropped = 0;
  out->num_frames = absl::GetStackTraceWithContext(out->frames, kMaxFrames, 0, context, &dropped);
}

#if defined(HW_BENCH_HAVE_LIBUNWIND)
void LibunwindBody(void* arg, const ucontext_t* context) {
  auto* out = static_cast<PeerOutput*>(arg);
  unw_cursor_t cursor;
  // On Linux the unw_context_t is the ucontext_t: start right at the interrupted frame.
  auto* unw_context = reinterpret_cast<unw_context_t*>(const_cast<ucontext_t*>(context));
  out->num_frames = 0;
  if (unw_init_local2(&cursor, unw_context, UNW_INIT_SIGNAL_FRAME) != 0) {
    return;
  }
  do {
    unw_word_t ip = 0;
    unw_get_reg(&cursor, UNW_REG_IP, &ip);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a code address, stored like the other peers'.
    out->frames[out->num_frames++] = reinterpret_cast<void*>(ip);
  } while (out->num_frames < kMaxFrames && unw_step(&cursor) > 0);
}
#endif

// ---- benchmarks ----
void BM_Peer(benchmark::State& state, SignalBody body, int depth) {
  Target target(depth);
  PeerOutput output;
  std::string error;
  auto channel = SignalChannel::Create(0, body, &output, &error);
  if (channel == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const auto timeout = kTimeout;
  channel->set_spin_ns(SpinNs());
  // One untimed request first: lazy initialisation (glibc loading libgcc_s, libunwind's
  // caches) belongs to no capture.
  channel->Request(target.info().tid, std::chrono::seconds(1));
  channel->Release();
  target.Reset();
  RoundTrips round_trips;
  int frames = 0;
  uint64_t handler_ns = 0;
  for (auto _ : state) {
    const uint64_t start = NowNs();
    if (channel->Request(target.info().tid, timeout) != SignalChannel::Outcome::kDone) {
      state.SkipWithError("request failed");
      break;
    }
    frames = output.num_frames;
    handler_ns += output.body_ns;
    channel->Release();
    round_trips.Add(NowNs() - start);
  }
  Report(state, target, round_trips);
  state.counters["frames"] = frames;
  state.counters["handler_ns"] =
      benchmark::Counter(static_cast<double>(handler_ns), benchmark::Counter::kAvgIterations);
}

void BM_Hangwatch(benchmark::State& state, int depth, bool read_sched_state) {
  Target target(depth);
  std::string error;
  SignalSamplerOptions options;
  options.timeout = kTimeout;
  options.read_sched_state = read_sched_state;
  options.spin = std::chrono::nanoseconds(SpinNs());
  auto sampler = SignalSampler::Create(options, &error);
  if (sampler == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  CaptureBuffer buffer(kMaxFrames, SignalSamplerOptions{}.max_stack_bytes);
  sampler->Capture(target.info(), &buffer);
  target.Reset();
  RoundTrips round_trips;
  uint64_t handler_ns = 0;
  for (auto _ : state) {
    const uint64_t start = NowNs();
    if (sampler->Capture(target.info(), &buffer) != CaptureStatus::kOk) {
      state.SkipWithError("capture failed");
      break;
    }
    round_trips.Add(NowNs() - start);
    handler_ns += buffer.pause_ns;
  }
  Report(state, target, round_trips);
  // The handler's own measurement of its body (registers, walk, stack copy), mean.
  state.counters["handler_ns"] =
      benchmark::Counter(static_cast<double>(handler_ns), benchmark::Counter::kAvgIterations);
  state.counters["frames"] = static_cast<double>(buffer.num_frames);
  state.counters["stack_bytes"] = static_cast<double>(buffer.stack_size);
}

void RegisterAll() {
  // Load libgcc_s (glibc's backtrace dlopens it on first use) outside any handler.
  void* warm[4];
  backtrace(warm, 4);
#if defined(HW_BENCH_HAVE_LIBUNWIND)
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
#endif
  for (int depth : {16, 64, 256}) {
    const std::string d = std::to_string(depth);
    auto peer = [](SignalBody body, int depth) {
      return [body, depth](benchmark::State& state) { BM_Peer(state, body, depth); };
    };
    benchmark::RegisterBenchmark(("BM_Capture/empty_handler/" + d).c_str(),
                                 peer(Timed<EmptyBody>, depth))
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("BM_Capture/hangwatch/" + d).c_str(),
        [depth](benchmark::State& state) { BM_Hangwatch(state, depth, true); })
        ->UseRealTime();
    // The same without the /proc scheduler-state read on the sampling side.
    benchmark::RegisterBenchmark(
        ("BM_Capture/hangwatch_no_proc/" + d).c_str(),
        [depth](benchmark::State& state) { BM_Hangwatch(state, depth, false); })
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_Capture/glibc_backtrace/" + d).c_str(),
                                 peer(Timed<GlibcBacktraceBody>, depth))
        ->UseRealTime();
#if defined(HW_BENCH_HAVE_LIBUNWIND)
    benchmark::RegisterBenchmark(("BM_Capture/libunwind/" + d).c_str(),
                                 peer(Timed<LibunwindBody>, depth))
        ->UseRealTime();
#endif
    benchmark::RegisterBenchmark(("BM_Capture/absl/" + d).c_str(), peer(Timed<AbslBody>, depth))
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Threads created from here on inherit the mask: the target re-pins itself to the last CPU.
  PinTo(1);
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
