// The watchdog's half of Config::time_every_pass: choosing and calibrating the clock that
// BeginWork()/EndWork() read (include/hangwatch/internal/pass_timer.h), and reading the
// counters they bump into a PassHistogram.
#ifndef HANGWATCH_AGENT_CORE_PASS_TIMER_H_
#define HANGWATCH_AGENT_CORE_PASS_TIMER_H_

#include <atomic>
#include <cstdint>

#include "hangwatch/internal/pass_timer.h"
#include "hangwatch/pass_histogram.h"

namespace hangwatch::agent {

// A watched thread's run-loop word and pass timer: the main thread's globals by default, else a
// ThreadLoop's (hangwatch/internal/pass_timer.h).
struct RunLoopWord {
  const std::atomic<uint64_t>* state = &internal::g_run_loop_state;
  const internal::PassTimer* timer = &internal::g_pass_timer;
};

// On the watched thread (Start()): picks the clock, measures its rate against
// CLOCK_MONOTONIC (about 1 ms, once per process), starts timing with the pass under way, if
// any, beginning now. Sets the timed-mode bit of the run-loop state, which only the watched
// thread writes.
void EnablePassTimer();
// From any thread: BeginWork()/EndWork() stop reading the clock (the watched thread's next
// call clears the timed-mode bit). The counters stay.
void DisablePassTimer();
// The same for any thread's timer (a ThreadLoop's, hangwatch/internal/pass_timer.h), any
// thread: the clock and its rate only (the thread's timed-mode bit is its own business). A
// timer already running keeps its pass begin.
void StartPassClock(internal::PassTimer* timer);
void StopPassClock(internal::PassTimer* timer);
// Whether the CPU's counter (not clock_gettime) is the clock.
bool PassTimerUsesCounter();

// The duration the watched thread measured for the pass of run-loop state `state` (odd,
// without the timed-mode bit), when it was timed and longer than the first slow-pass
// threshold (16 ms) and its record was not reused since (the last kMeasuredPassSlots slow
// passes are kept). Any thread.
bool MeasuredPassNs(uint64_t state, uint64_t* ns);
bool MeasuredPassNs(const internal::PassTimer& timer, uint64_t state, uint64_t* ns);
// How long the pass of state `state` has been running, by the pass clock, when it is still
// the watched thread's current pass and is timed. Any thread.
bool RunningPassNs(uint64_t state, uint64_t* ns);
bool RunningPassNs(const std::atomic<uint64_t>& word, const internal::PassTimer& timer,
                   uint64_t state, uint64_t* ns);

// Every pass counted since the process started (or forked from one that counted).
PassHistogram ReadPassTimer();
PassHistogram ReadPassTimer(const internal::PassTimer& timer);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_PASS_TIMER_H_
