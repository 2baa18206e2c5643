// An unmodified event-loop program for the shim's output tests (preload_output_test.cc).
//
//   preload_stall_fixture [--detach DATA_FILE] STALL_MS
//
// Waits for events (poll, 50 ms: the shim arms), stalls its main thread for STALL_MS (a busy
// loop), waits again and exits 0. With --detach it first does what a daemon does with its
// standard descriptors: closes 0, 1 and 2, then opens /dev/null (it becomes 0 and 1) and its
// own DATA_FILE (it becomes 2).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" __attribute__((noinline)) void StallTheMainThread(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

int main(int argc, char** argv) {
  int arg = 1;
  if (argc > 3 && std::strcmp(argv[1], "--detach") == 0) {
    close(0);
    close(1);
    close(2);
    if (open("/dev/null", O_RDWR) != 0 || open("/dev/null", O_RDWR) != 1 ||
        open(argv[2], O_RDWR | O_APPEND) != 2) {
      return 3;
    }
    arg = 3;
  }
  if (argc - arg != 1) return 2;
  poll(nullptr, 0, 50);
  StallTheMainThread(std::atoi(argv[arg]));
  poll(nullptr, 0, 50);
  return 0;
}
