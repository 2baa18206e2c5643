// An unmodified event-loop program whose handler waits for another descriptor
// (preload_handler_wait_test.cc).
//
//   preload_handler_wait_fixture HANDLER_MS
//
// Its loop polls a pipe with a 100 ms timer. After three idle ticks an event arrives (a byte on
// the pipe); its handler polls another pipe, which nothing writes, for HANDLER_MS: a synchronous
// call to a peer that does not answer in time. Then two more idle ticks, and exit 0.
#include <poll.h>
#include <unistd.h>

#include <cstdlib>

namespace {

extern "C" __attribute__((noinline)) void WaitForThePeer(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  poll(&p, 1, ms);
  __asm__ volatile("" ::: "memory");  // not a tail call: the handler's frame stays
}

__attribute__((noinline)) void HandleEvent(int event_fd, int peer_fd, int ms) {
  char byte;
  if (read(event_fd, &byte, 1) != 1) std::exit(3);
  WaitForThePeer(peer_fd, ms);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int handler_ms = std::atoi(argv[1]);
  int events[2], peer[2];
  if (pipe(events) != 0 || pipe(peer) != 0) return 3;
  int idle_ticks = 0;
  while (idle_ticks < 5) {
    struct pollfd p = {events[0], POLLIN, 0};
    const int n = poll(&p, 1, 100);
    if (n > 0) {
      HandleEvent(events[0], peer[0], handler_ms);
    } else if (n == 0 && ++idle_ticks == 3) {
      if (write(events[1], "e", 1) != 1) return 3;
    }
  }
  return 0;
}
