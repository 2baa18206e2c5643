// An event loop that waits in a runtime's wait function (fake_tcl_runtime.cc stands in for
// libtcl), for preload_runtime_wait_test.cc:
//   1. a poll() of 50 ms on the main thread before the loop, as Xlib makes while a Tk program
//      starts: the shim arms there;
//   2. ten calls of Tcl_WaitForEvent with a zero time (Tcl's `update`), each polling without
//      waiting and then waiting 30 ms inside: idle, all of it;
//   3. three passes of the loop, each waiting 400 ms in Tcl_WaitForEvent, which polls and then
//      sleeps inside: idle, all of it;
//   4. a callback that sleeps 500 ms in poll(): work of the pass, since the loop waits in
//      Tcl_WaitForEvent (Tcl's `after 500` does the same in select());
//   5. one more short wait in Tcl_WaitForEvent, which ends that pass, and exit 0.
#include <poll.h>

extern "C" {
struct TclTime {
  long sec;
  long usec;
};
int Tcl_WaitForEvent(const TclTime* time);
}

extern "C" __attribute__((noinline)) void CallbackThatPolls() {
  const int result = poll(nullptr, 0, 500);
  __asm__ volatile("" : : "r"(result) : "memory");  // not a tail call: this frame stays
}

int main() {
  poll(nullptr, 0, 50);
  const TclTime no_time = {0, 0};
  for (int i = 0; i < 10; ++i) Tcl_WaitForEvent(&no_time);
  const TclTime idle = {0, 400000};
  for (int i = 0; i < 3; ++i) Tcl_WaitForEvent(&idle);
  CallbackThatPolls();
  const TclTime shortly = {0, 20000};
  Tcl_WaitForEvent(&shortly);
  return 0;
}
