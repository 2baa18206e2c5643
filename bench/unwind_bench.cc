// Unwinding cost off the target thread, and the cost of capturing a thread that sleeps.
//
// BM_Unwind/<method>/64: the same 64 frames (a recursion on the benchmark thread, copied with
// its registers once, as a capture would):
//   fp               unwind::WalkFramePointers over the copy
//   cfi              symbols::CfiUnwinder, libdwfl for every frame (Mode::kCfiOnly)
//   hybrid           symbols::CfiUnwinder, the default: CFI at the pc, frame-pointer steps where
//                    the CFI says they are exact
//   libunwind_local  unw_backtrace() on the live stack of the calling thread (libunwind's own
//                    cache, local unwinding: the best a peer does in-thread)
// BM_BlockedCapture/<path>: one capture of a thread sleeping in nanosleep, by reading /proc
// (unwind::ProcFirstSampler, as the agent does: its /proc files stay open between samples) or
// by the signal (SignalSampler). Counter target_pause_ns is the
// mean time the target spent answering (0 for /proc: it is not interrupted); eintr_per_capture
// the EINTRs the target saw.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "symbols/cfi_unwinder.h"
#include "unwind/frame_walker.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/signal_sampler.h"

#if __has_include(<libunwind.h>)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define HW_BENCH_HAVE_LIBUNWIND 1
#endif

namespace {

using hangwatch::symbols::CfiUnwinder;
using hangwatch::symbols::FrameMethod;
using hangwatch::symbols::UnwindStart;
using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::MemoryView;
using hangwatch::unwind::Registers;

constexpr size_t kFrames = 64;
constexpr int kDepth = 80;  // deeper than 64: every method stops at exactly 64 frames
constexpr size_t kCopyBytes = 256 * 1024;

enum class Method { kFp, kCfi, kHybrid, kLibunwindLocal };

// Registers of the calling function's frame and a copy of the stack above them.
struct StackCopy {
  Registers regs;
  std::vector<unsigned char> bytes;
  uintptr_t base = 0;
  MemoryView view() const { return MemoryView{base, bytes.size(), bytes.data()}; }
};

__attribute__((noinline)) void CopyOwnStack(StackCopy* out) {
  uintptr_t pc = 0, sp = 0, fp = 0;
#if defined(__x86_64__)
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(fp));
#elif defined(__aarch64__)
  asm volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(pc), "=r"(sp), "=r"(fp));
#endif
  pthread_attr_t attr;
  void* lo = nullptr;
  size_t size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &lo, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(lo) + size;
  const size_t len = std::min<size_t>(hi - sp, kCopyBytes);
  out->regs.pc = pc;
  out->regs.sp = sp;
  out->regs.fp = fp;
  out->base = sp;
  out->bytes.assign(reinterpret_cast<unsigned char*>(sp),
                    reinterpret_cast<unsigned char*>(sp) + len);
}

void RunUnwind(benchmark::State& state, Method method) {
  StackCopy copy;
  CopyOwnStack(&copy);
  absl::StatusOr<std::unique_ptr<CfiUnwinder>> created = CfiUnwinder::ForSelf();
  if (!created.ok()) {
    state.SkipWithError(created.status().ToString().c_str());
    return;
  }
  std::unique_ptr<CfiUnwinder> unwinder = std::move(*created);
  uintptr_t frames[kFrames];
  FrameMethod methods[kFrames];
  const MemoryView view = copy.view();
  const std::span<const MemoryView> memory(&view, 1);
  UnwindStart start;
  start.regs = copy.regs;
  size_t n = 0;
  size_t cfi_frames = 0;
  for (auto _ : state) {
    switch (method) {
      case Method::kFp:
        n = hangwatch::unwind::WalkFramePointers(view, copy.regs, frames, kFrames).num_frames;
        break;
      case Method::kCfi:
      case Method::kHybrid: {
        auto r = unwinder->Unwind(
            start, memory, frames, methods, kFrames,
            method == Method::kCfi ? CfiUnwinder::Mode::kCfiOnly : CfiUnwinder::Mode::kHybrid);
        n = r.num_frames;
        cfi_frames = r.cfi_frames;
        break;
      }
      case Method::kLibunwindLocal:
#if defined(HW_BENCH_HAVE_LIBUNWIND)
        n = static_cast<size_t>(unw_backtrace(reinterpret_cast<void**>(frames), kFrames));
#else
        state.SkipWithError("libunwind not available");
        return;
#endif
        break;
    }
    benchmark::DoNotOptimize(frames);
  }
  state.counters["frames"] = static_cast<double>(n);
  state.counters["cfi_frames"] = static_cast<double>(cfi_frames);
  if (n != kFrames) state.SkipWithError("did not reach 64 frames");
}

__attribute__((noinline)) void Recurse(int depth, benchmark::State& state, Method method) {
  if (depth > 0) {
    Recurse(depth - 1, state, method);
    asm volatile("" ::: "memory");
    return;
  }
  RunUnwind(state, method);
}

void BM_Unwind(benchmark::State& state, Method method) { Recurse(kDepth, state, method); }

// ---- blocked capture ----

std::atomic<bool> g_sleeper_stop{false};
std::atomic<uint64_t> g_sleeper_eintr{0};
void Noop(int) {}

struct NanosleepThread {
  hangwatch::unwind::ThreadInfo info;
  std::atomic<bool> ready{false};
  std::thread thread;
  NanosleepThread() {
    struct sigaction sa {};
    sa.sa_handler = Noop;
    sigaction(SIGUSR2, &sa, nullptr);
    g_sleeper_stop = false;
    g_sleeper_eintr = 0;
    thread = std::thread([this] {
      hangwatch::unwind::RegisterCurrentThread(&info);
      ready = true;
      while (!g_sleeper_stop.load()) {
        timespec ts{10, 0};
        if (nanosleep(&ts, nullptr) != 0 && errno == EINTR && !g_sleeper_stop.load()) {
          g_sleeper_eintr.fetch_add(1);
        }
      }
    });
    while (!ready.load()) std::this_thread::yield();
    // Until it sleeps (state S).
    for (;;) {
      CaptureBuffer probe(4, 0);
      if (hangwatch::unwind::ReadBlockedThread(info, &probe) ==
          hangwatch::unwind::ProcReadStatus::kOk) {
        break;
      }
      std::this_thread::yield();
    }
  }
  ~NanosleepThread() {
    g_sleeper_stop = true;
    pthread_kill(thread.native_handle(), SIGUSR2);
    thread.join();
  }
};

void BM_BlockedCapture(benchmark::State& state, bool proc) {
  NanosleepThread sleeper;
  CaptureBuffer buffer(kFrames, 64 * 1024);
  std::unique_ptr<hangwatch::unwind::SignalSampler> sampler;
  // No fallback: a sample the /proc path cannot take counts as failed.
  hangwatch::unwind::ProcFirstSampler proc_sampler(nullptr);
  if (!proc) {
    hangwatch::unwind::SignalSamplerOptions so;
    so.timeout = std::chrono::seconds(1);
    std::string error;
    sampler = hangwatch::unwind::SignalSampler::Create(so, &error);
    if (sampler == nullptr) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  uint64_t pause_total = 0;
  uint64_t captures = 0;
  uint64_t failures = 0;
  for (auto _ : state) {
    bool ok;
    if (proc) {
      ok = proc_sampler.Capture(sleeper.info, &buffer) == hangwatch::unwind::CaptureStatus::kOk;
    } else {
      ok = sampler->Capture(sleeper.info, &buffer) == hangwatch::unwind::CaptureStatus::kOk;
    }
    if (ok) {
      pause_total += buffer.pause_ns;
      ++captures;
    } else {
      ++failures;
    }
  }
  state.counters["target_pause_ns"] =
      captures > 0 ? static_cast<double>(pause_total) / static_cast<double>(captures) : 0;
  state.counters["eintr_per_capture"] =
      captures > 0 ? static_cast<double>(g_sleeper_eintr.load()) / static_cast<double>(captures)
                   : 0;
  state.counters["failed"] = static_cast<double>(failures);
}

BENCHMARK_CAPTURE(BM_Unwind, fp / 64, Method::kFp)->Name("BM_Unwind/fp/64");
BENCHMARK_CAPTURE(BM_Unwind, cfi / 64, Method::kCfi)->Name("BM_Unwind/cfi/64");
BENCHMARK_CAPTURE(BM_Unwind, hybrid / 64, Method::kHybrid)->Name("BM_Unwind/hybrid/64");
BENCHMARK_CAPTURE(BM_Unwind, libunwind_local / 64, Method::kLibunwindLocal)
    ->Name("BM_Unwind/libunwind_local/64");
BENCHMARK_CAPTURE(BM_BlockedCapture, proc, true)->Name("BM_BlockedCapture/proc");
BENCHMARK_CAPTURE(BM_BlockedCapture, signal, false)->Name("BM_BlockedCapture/signal");

}  // namespace

BENCHMARK_MAIN();
