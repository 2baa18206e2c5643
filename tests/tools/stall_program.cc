// A small event-loop program for the command-line tests.
//
//   stall_program [--agent REPORT.jsonl] EXIT STALL_MS [kill|die|exit|_exit|exit_group]
//
// Waits for events (poll, 50 ms), stalls its main thread for STALL_MS in StallTheMainThread()
// (a busy loop; 0: no stall), waits again, then exits with EXIT - or, with "kill", kills itself
// with SIGTERM; with "die", another thread kills the process with SIGKILL two thirds into the
// stall (a hang that kills its process, as a system watchdog would); with "exit" / "_exit" the
// stall comes after the last wait, on the way out: main returns (exit()) or calls _exit()
// right after it, so that its pass ends because the process exits (a shutdown-phase hang);
// "exit_group" is the same with the raw exit_group system call, which no exit hook sees (as Go's
// os.Exit): the pass is still open when the process is gone.
// Without --agent it is an
// unmodified program for `hangwatch run` (the preload shim sees the polls); with --agent it embeds
// the agent itself (threshold 100 ms, samples every 10 ms) and writes REPORT, which makes report
// input without the shim.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hangwatch/hangwatch.h"

#ifdef HANGWATCH_STALL_PADDING
// stall_program_relayout (tests/tools/CMakeLists.txt): code placed before the functions below
// moves them to other offsets in the binary, so the two builds differ in layout and build-id.
extern "C" __attribute__((noinline, used)) uint64_t RelayoutPadding(uint64_t x) {
  for (int round = 0; round < 16; ++round) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull + static_cast<uint64_t>(round);
    x ^= x >> 29;
    x += static_cast<uint64_t>(round) * 0x9e3779b97f4a7c15ull;
  }
  return x;
}
#endif

extern "C" __attribute__((noinline)) void StallTheMainThread(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 200000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

int main(int argc, char** argv) {
  const char* report = nullptr;
  int arg = 1;
  if (argc > 2 && std::strcmp(argv[1], "--agent") == 0) {
    report = argv[2];
    arg = 3;
  }
  if (argc - arg < 2) {
    std::fprintf(stderr, "usage: stall_program [--agent REPORT] EXIT STALL_MS [kill]\n");
    return 2;
  }
  const int exit_code = std::atoi(argv[arg]);
  const int stall_ms = std::atoi(argv[arg + 1]);
  const bool kill_self = argc - arg > 2 && std::strcmp(argv[arg + 2], "kill") == 0;
  const bool die = argc - arg > 2 && std::strcmp(argv[arg + 2], "die") == 0;
  const bool stall_at_exit = argc - arg > 2 && std::strcmp(argv[arg + 2], "exit") == 0;
  const bool stall_at_underscore_exit = argc - arg > 2 && std::strcmp(argv[arg + 2], "_exit") == 0;
  const bool stall_at_exit_group = argc - arg > 2 && std::strcmp(argv[arg + 2], "exit_group") == 0;
  if (report != nullptr) {
    hangwatch::Config config;
    config.threshold = std::chrono::milliseconds(100);
    config.sample_interval = std::chrono::milliseconds(10);
    config.json_path = report;
    config.log_hangs = false;
    if (auto s = hangwatch::Start(config); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 2;
    }
  }
  poll(nullptr, 0, 50);
  if (stall_at_exit || stall_at_underscore_exit || stall_at_exit_group) {
    poll(nullptr, 0, 50);
    StallTheMainThread(stall_ms);  // the pass after the last wait, ended by the exit
    if (stall_at_underscore_exit) _exit(exit_code);
    if (stall_at_exit_group) syscall(SYS_exit_group, exit_code);
    return exit_code;
  }
  if (stall_ms > 0) {
    hangwatch::WorkScope pass;  // a no-op for the shim's copy of the agent: it sees the polls
    if (die) {
      std::thread([stall_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms * 2 / 3));
        kill(getpid(), SIGKILL);
      }).detach();
    }
    StallTheMainThread(stall_ms);
  }
  poll(nullptr, 0, 50);
  if (report != nullptr) hangwatch::Stop();
  if (kill_self) raise(SIGTERM);
  return exit_code;
}
