// The capture's pause with and without the Ruby frames, in one run.
//
// An embedded Ruby VM (Debian's libruby-3.1.so.3.1, linked by its path: no ruby3.1-dev needed)
// runs, on a thread of its own that is the VM's main thread, a method 50 Ruby frames deep that
// spins; the benchmark thread captures that thread with the agent's SignalSampler over and over,
// with the Ruby capture hook (ruby/capture_hook.h) installed (ruby_on) or not (ruby_off).
// Counter pause_p50_ns is the median of the handler's own measure of the pause
// (CaptureBuffer::pause_ns: registers, frame-pointer walk, stack copy, and with the hook the Ruby
// frames); rtt_p50_ns the median round trip seen by the sampling thread; rb_frames the frames
// the hook recorded at the last capture; from_copy whether it found them in the copy read with
// the execution context, one_read whether their flags were in that same read too (one system
// call for the whole capture).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "python/process_memory_reader.h"
#include "ruby/capture_hook.h"
#include "ruby/control_frames.h"
#include "ruby/ruby_process.h"
#include "ruby/vm_locator.h"
#include "symbols/process_modules.h"
#include "unwind/capture_hook.h"
#include "unwind/signal_sampler.h"

// libruby's embedding API (ruby/internal/interpreter.h, eval.h), declared here: VALUE is an
// uintptr_t.
extern "C" {
void ruby_init_stack(volatile uintptr_t* addr);
int ruby_setup(void);
void ruby_init_loadpath(void);
uintptr_t rb_eval_string_protect(const char* str, int* state);
}

namespace hangwatch {
namespace {

constexpr int kDepth = 50;
constexpr int kCaptures = 2000;

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The VM and its spinning thread, 50 Ruby frames deep; set up once.
struct RubyTarget {
  unwind::ThreadInfo info;
  std::atomic<bool> started{false};
  std::unique_ptr<ruby::RubyCaptureHook> hook;
  std::unique_ptr<unwind::SignalSampler> sampler;
  std::string error;

  RubyTarget() {
    std::thread([this] {
      unwind::RegisterCurrentThread(&info);
      volatile uintptr_t stack_mark = 0;
      ruby_init_stack(&stack_mark);
      if (ruby_setup() != 0) {
        error = "ruby_setup failed";
        started.store(true);
        return;
      }
      ruby_init_loadpath();
      started.store(true);
      const std::string code =
          "def deep(n)\n"
          "  if n <= 1\n"
          "    x = 0\n"
          "    x += 1 while true\n"
          "  end\n"
          "  deep(n - 1)\n"
          "end\n"
          "deep(" +
          std::to_string(kDepth) + ")\n";
      int state = 0;
      rb_eval_string_protect(code.c_str(), &state);
    }).detach();
    while (!started.load()) usleep(1000);
    if (!error.empty()) return;

    const python::ProcessMemoryReader self(getpid());
    auto modules = symbols::ReadProcessModules(getpid());
    if (!modules.ok()) {
      error = "modules: " + std::string(modules.status().message());
      return;
    }
    auto addresses = ruby::LocateVm(*modules, self);
    if (!addresses.ok()) {
      error = "vm: " + std::string(addresses.status().message());
      return;
    }
    static ruby::RubyLayout layout;
    if (std::string why = ruby::LayoutForVm(*addresses, &layout); !why.empty()) {
      error = why;
      return;
    }
    const ruby::VmReader reader(self, layout, *addresses);
    // Until the recursion is at its bottom (the chain read here says so), at most 10 s.
    uint64_t thread = 0;
    for (int i = 0; i < 10000; ++i, usleep(1000)) {
      thread = reader.FindThread(info.tid);
      ruby::RubyFrame frames[128];
      ruby::FramesEnd end = ruby::FramesEnd::kComplete;
      if (thread != 0 &&
          reader.ReadFrames(reader.ExecutionContext(thread), frames, 128, &end) > kDepth) {
        break;
      }
    }
    if (thread == 0) {
      error = "the VM's main thread was not found";
      return;
    }
    hook = std::make_unique<ruby::RubyCaptureHook>(layout, 1024, 64 * 1024);
    hook->Watch(info.tid, thread);
    unwind::SignalSamplerOptions so;
    so.max_extra_words = ruby::CaptureWords(1024);
    sampler = unwind::SignalSampler::Create(so, &error);
  }
};

RubyTarget& Target() {
  static RubyTarget* t = new RubyTarget();
  return *t;
}

void BM_Capture50RubyFramesDeep(benchmark::State& state) {
  RubyTarget& t = Target();
  if (!t.error.empty() || t.sampler == nullptr) {
    state.SkipWithError(t.error.c_str());
    return;
  }
  const bool ruby_on = state.range(0) != 0;
  unwind::SetCaptureHook(ruby_on ? t.hook.get() : nullptr);
  unwind::CaptureBuffer buf(256, 64 * 1024, ruby::CaptureWords(1024));
  std::vector<uint64_t> pauses, rtts;
  pauses.reserve(kCaptures);
  rtts.reserve(kCaptures);
  size_t frames = 0;
  ruby::FramesEnd end = ruby::FramesEnd::kComplete;
  for (auto _ : state) {
    const uint64_t start = NowNs();
    const unwind::CaptureStatus status = t.sampler->Capture(t.info, &buf);
    const uint64_t rtt = NowNs() - start;
    if (status != unwind::CaptureStatus::kOk) {
      state.SkipWithError(unwind::CaptureStatusName(status));
      break;
    }
    if (pauses.size() < kCaptures) {
      pauses.push_back(buf.pause_ns);
      rtts.push_back(rtt);
    }
    if (ruby_on) {
      ruby::RubyFrame decoded[1024];
      frames = ruby::DecodeCaptureWords(buf.extra(), buf.num_extra, decoded, 1024, &end);
    }
  }
  unwind::SetCaptureHook(nullptr);
  state.counters["pause_p50_ns"] = static_cast<double>(Median(pauses));
  state.counters["rtt_p50_ns"] = static_cast<double>(Median(rtts));
  state.counters["rb_frames"] = static_cast<double>(frames);
  if (ruby_on) {
    state.counters["from_copy"] = t.hook->last_used_copy() ? 1 : 0;
    state.counters["one_read"] = t.hook->last_one_read() ? 1 : 0;
    if (frames < kDepth) state.SkipWithError("fewer Ruby frames than the recursion's depth");
  }
}
BENCHMARK(BM_Capture50RubyFramesDeep)
    ->ArgName("ruby_on")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(kCaptures)
    ->UseRealTime();

}  // namespace
}  // namespace hangwatch

BENCHMARK_MAIN();
