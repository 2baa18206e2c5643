// A stand-in for libtcl's wait function, for preload_runtime_wait_test.cc: a Tcl_WaitForEvent
// that waits in two steps, a poll() (as an unthreaded Tcl's select) and then a sleep, so that the
// poll returns while the runtime's wait is still under way. Built as a shared library, like
// libtcl, so that the preload shim's definition comes first.
#include <poll.h>
#include <time.h>

namespace {

void SleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

extern "C" {

struct TclTime {
  long sec;
  long usec;
};

// Waits `time` (null: 300 ms): the first half in poll(), the second half after it returned. A zero
// time (Tcl's `update`) polls without waiting, then waits 30 ms for the answer, as threaded Tcl
// waits for its notifier thread's poll.
__attribute__((visibility("default"))) int Tcl_WaitForEvent(const TclTime* time) {
  const long ms = time == nullptr ? 300 : time->sec * 1000 + time->usec / 1000;
  if (ms == 0) {
    poll(nullptr, 0, 0);
    SleepMs(30);
    return 0;
  }
  poll(nullptr, 0, static_cast<int>(ms / 2));
  SleepMs(ms - ms / 2);
  return 0;
}

}  // extern "C"
