// An unmodified event-loop program whose handler waits for another descriptor
// (preload_handler_wait_test.cc).
//
//   preload_handler_wait_fixture HANDLER_MS
//   preload_handler_wait_fixture --fork
//   preload_handler_wait_fixture --busy HANDLER_MS
//   preload_handler_wait_fixture --busy-nested HANDLER_MS
//
// Its loop polls a pipe with a 100 ms timer. After three idle ticks an event arrives (a byte on
// the pipe); its handler polls another pipe, which nothing writes, for HANDLER_MS: a synchronous
// call to a peer that does not answer in time. Then two more idle ticks, and exit 0.
//
// With --fork, the handler forks instead: the child runs a loop of its own, from another call
// site deeper in the stack, idle for 800 ms (100 ms ticks), and exits; the parent's loop ticks
// until the child closed its end of a pipe, then reaps it and exits 0.
//
// With --busy, the loop never idles: its event pipe is filled before the loop starts with more
// events than it handles, so its poll (still with a 100 ms timer) returns ready every time and
// never times out. Every handler first asks a peer that answers at once (a poll from the
// handler, deeper than the loop's, that returns ready); the 300th asks the peer that does not
// answer, for HANDLER_MS. After 600 events, exit 0. With --busy-nested, the 300th handler then
// runs a nested loop (the same loop's wait, from deeper: a modal dialog's), idle for 600 ms in
// ticks that time out, and the 450th asks the peer that does not answer.
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

// One wait of the busy loop, at one call site whatever the depth it is called from.
__attribute__((noinline)) int BusyLoopWait(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  const int n = poll(&p, 1, ms);
  __asm__ volatile("" ::: "memory");
  return n;
}

// A nested run of the loop, from a handler: 4 idle ticks of 150 ms at the loop's own call site.
// 0 when each timed out.
__attribute__((noinline)) int ModalLoop(int fd) {
  int ready = 0;
  for (int tick = 0; tick < 4; ++tick) ready += BusyLoopWait(fd, 150) != 0;
  __asm__ volatile("" ::: "memory");
  return ready;
}

// The loop under constant load (--busy, --busy-nested): one byte per event, each handler waits
// for a peer. `nested`: the 300th handler runs a nested loop of the same loop (a modal dialog's),
// at the loop's own call site, idle for 4 ticks of 150 ms; the 450th waits for the silent peer.
int BusyLoop(int handler_ms, bool nested) {
  constexpr int kEvents = 600;
  int events[2], answering[2], silent[2];
  if (pipe(events) != 0 || pipe(answering) != 0 || pipe(silent) != 0) return 3;
  char bytes[kEvents];
  std::memset(bytes, 'e', sizeof bytes);
  // A pipe holds 64 KiB: both writes complete at once.
  if (write(events[1], bytes, sizeof bytes) != kEvents) return 3;
  if (write(answering[1], bytes, sizeof bytes) != kEvents) return 3;
  const int slow_event = nested ? kEvents * 3 / 4 : kEvents / 2;
  for (int handled = 0; handled < kEvents;) {
    // It never idles: a time-out is a broken fixture.
    if (BusyLoopWait(events[0], 100) <= 0) return 5;
    ++handled;
    if (handled == slow_event) {
      HandleEvent(events[0], silent[0], handler_ms);
      continue;
    }
    HandleEvent(events[0], answering[0], 1000);
    char byte;
    if (read(answering[0], &byte, 1) != 1) return 3;
    if (nested && handled == kEvents / 2 && ModalLoop(silent[0]) != 0) return 5;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strncmp(argv[1], "--busy", 6) == 0) {
    return BusyLoop(std::atoi(argv[2]), std::strcmp(argv[1], "--busy-nested") == 0);
  }
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
