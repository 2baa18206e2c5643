// A program with three known hangs, for the pprof test: it embeds the agent (threshold 100 ms,
// samples every 10 ms), writes REPORT, and stalls its main thread three times, STALL_MS each:
//
//   BusyCulprit     a busy loop                                  -> class busy
//   SleepCulprit    nanosleep                                    -> class blocked
//   PipeCulprit     read() on a pipe another thread writes later -> class blocked
//
//   three_culprits_program REPORT.jsonl STALL_MS
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "hangwatch/hangwatch.h"

extern "C" __attribute__((noinline)) void BusyCulprit(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 200000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

extern "C" __attribute__((noinline)) void SleepCulprit(int ms) {
  timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
  asm volatile("" ::: "memory");  // keeps the call from being a tail call
}

extern "C" __attribute__((noinline)) void PipeCulprit(int ms) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  std::thread writer([fd = fds[1], ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const char c = 'x';
    if (write(fd, &c, 1) != 1) std::abort();
  });
  char c;
  while (read(fds[0], &c, 1) != 1) {
  }
  writer.join();
  close(fds[0]);
  close(fds[1]);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: three_culprits_program REPORT.jsonl STALL_MS\n");
    return 2;
  }
  const int ms = std::atoi(argv[2]);
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.sample_interval = std::chrono::milliseconds(10);
  config.json_path = argv[1];
  config.log_hangs = false;
  if (auto s = hangwatch::Start(config); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 2;
  }
  for (void (*stall)(int) : {BusyCulprit, SleepCulprit, PipeCulprit}) {
    poll(nullptr, 0, 50);
    hangwatch::WorkScope pass;
    stall(ms);
  }
  poll(nullptr, 0, 50);
  hangwatch::Stop();
  return 0;
}
