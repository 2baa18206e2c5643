// The test executable scripts/cross/check-macos links for arm64 macOS (and compiles for x86_64,
// whose symbols it checks without linking): every piece of the Mach build in one program, each
// of them used, so that a missing symbol, a Linux-only call or an API misuse in any of them
// fails on Linux already.
//
// Run on a Mac it is also a smoke test: a worker thread spins in a known function, the main
// thread captures it with MachSampler a few times and prints what it got; exit 0 when a
// capture found the worker's stack. (symbols/'s dyld module list reports errors as
// absl::Status, and Abseil's macOS libraries are not at hand: check-macos compiles it without
// linking it here.)
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "unwind/mach/mach_sampler.h"
#include "unwind/thread_capture.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_registered{false};
hangwatch::unwind::ThreadInfo g_worker;

__attribute__((noinline)) void Spin() {
  while (!g_stop.load(std::memory_order_relaxed)) {
  }
}

void Worker() {
  if (!hangwatch::unwind::RegisterCurrentThread(&g_worker)) {
    std::fprintf(stderr, "RegisterCurrentThread failed\n");
  }
  g_registered.store(true);
  Spin();
}

}  // namespace

int main() {
  namespace unwind = hangwatch::unwind;
  if (!unwind::mach::IsMainThread()) {
    std::fprintf(stderr, "main() is not on the main thread?\n");
    return 1;
  }
  std::string error;
  auto sampler = unwind::mach::MachSampler::Create({}, &error);
  if (!sampler) {
    std::fprintf(stderr, "MachSampler: %s\n", error.c_str());
    return 1;
  }
  std::thread worker(Worker);
  while (!g_registered.load()) std::this_thread::yield();

  unwind::CaptureBuffer buffer(64, 16 * 1024);
  bool found_stack = false;
  for (int i = 0; i < 5; ++i) {
    const unwind::CaptureStatus status = sampler->Capture(g_worker, &buffer);
    std::printf("capture %d: %s, %zu frames, %zu stack bytes, paused %llu ns, state %c\n", i,
                unwind::CaptureStatusName(status), buffer.num_frames, buffer.stack_size,
                static_cast<unsigned long long>(buffer.pause_ns), buffer.sched_state);
    if (status == unwind::CaptureStatus::kOk && buffer.num_frames >= 2 && buffer.stack_size > 0) {
      found_stack = true;
    }
  }
  g_stop.store(true);
  worker.join();

  return found_stack ? 0 : 1;
}
