// The watchdog's half of Config::time_every_pass: choosing and calibrating the clock that
// BeginWork()/EndWork() read (include/hangwatch/internal/pass_timer.h), and reading the
// counters they bump into a PassHistogram.
#ifndef HANGWATCH_AGENT_PASS_TIMER_H_
#define HANGWATCH_AGENT_PASS_TIMER_H_

#include "hangwatch/pass_histogram.h"

namespace hangwatch::agent {

// On the watched thread (Start()): picks the clock, measures its rate against
// CLOCK_MONOTONIC (about 1 ms, once per process), starts timing with the pass under way, if
// any, beginning now. Sets the timed-mode bit of the run-loop state, which only the watched
// thread writes.
void EnablePassTimer();
// From any thread: BeginWork()/EndWork() stop reading the clock (the watched thread's next
// call clears the timed-mode bit). The counters stay.
void DisablePassTimer();
// Whether the CPU's counter (not clock_gettime) is the clock.
bool PassTimerUsesCounter();

// Every pass counted since the process started (or forked from one that counted).
PassHistogram ReadPassTimer();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_PASS_TIMER_H_
