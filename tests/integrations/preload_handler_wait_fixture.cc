// An unmodified event-loop program whose handler waits for another descriptor
// (preload_handler_wait_test.cc).
//
//   preload_handler_wait_fixture HANDLER_MS
//   preload_handler_wait_fixture --fork
//
// Its loop polls a pipe with a 100 ms timer. After three idle ticks an event arrives (a byte on
// the pipe); its handler polls another pipe, which nothing writes, for HANDLER_MS: a synchronous
// call to a peer that does not answer in time. Then two more idle ticks, and exit 0.
//
// With --fork, the handler forks instead: the child runs a loop of its own, from another call
// site deeper in the stack, idle for 800 ms (100 ms ticks), and exits; the parent's loop ticks
// until the child closed its end of a pipe, then reaps it and exits 0.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

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

__attribute__((noinline)) int ChildTick() {
  struct pollfd none = {-1, 0, 0};
  const int n = poll(&none, 1, 100);
  __asm__ volatile("" ::: "memory");
  return n;
}

// The forked child's own loop: idle, at a call site its parent never waited at.
__attribute__((noinline)) void ChildLoop() {
  for (int tick = 0; tick < 8; ++tick) ChildTick();
}

// The parent's loop after the fork: ticks until the child's end of `alive` closes.
int WatchChild(pid_t child, int alive) {
  for (;;) {
    struct pollfd p = {alive, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) break;
  }
  int status = 0;
  return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
                                                                                              : 4;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const bool fork_child = std::strcmp(argv[1], "--fork") == 0;
  const int handler_ms = std::atoi(argv[1]);
  int events[2], peer[2];
  if (pipe(events) != 0 || pipe(peer) != 0) return 3;
  int idle_ticks = 0;
  while (idle_ticks < 5) {
    struct pollfd p = {events[0], POLLIN, 0};
    const int n = poll(&p, 1, 100);
    if (n > 0 && fork_child) {
      int alive[2];
      if (pipe(alive) != 0) return 3;
      const pid_t child = fork();
      if (child == 0) {
        close(alive[0]);
        ChildLoop();
        return 0;  // alive[1] closes with the process
      }
      close(alive[1]);
      return WatchChild(child, alive[0]);
    }
    if (n > 0) {
      HandleEvent(events[0], peer[0], handler_ms);
    } else if (n == 0 && ++idle_ticks == 3) {
      if (write(events[1], "e", 1) != 1) return 3;
    }
  }
  return 0;
}
