// The watchdog's sleep between two ticks, and the one way to end it early.
//
// Stop() wakes it so that Stop() returns at once, and _exit() wakes it through
// FlushBeforeExit() (exit_flush.h) so that the last records are written within a bound that
// does not depend on the check interval (which is a fifth of the threshold: seconds at a long
// threshold). _exit() may run inside a signal handler that interrupted anything, so waking must
// be async-signal-safe: on Linux the sleep is a futex wait on a counter, and waking is an atomic
// increment and one FUTEX_WAKE. (A condition variable cannot be notified from a signal handler.)
// Other platforms have no _exit() interposer; there a mutex and condition variable do the same
// for Stop().
//
// Process-wide, like the agent: one watchdog sleeps at a time.
#ifndef HANGWATCH_AGENT_CORE_WATCHDOG_SLEEP_H_
#define HANGWATCH_AGENT_CORE_WATCHDOG_SLEEP_H_

#include <cstdint>

namespace hangwatch::agent {

// The number of wake-ups so far. Read it before checking whether to go on, then sleep with it:
// a wake-up between the check and the sleep is not lost.
uint32_t WatchdogWakeups() noexcept;

// Sleeps until `deadline_ns` (CLOCK_MONOTONIC, the clock of std::chrono::steady_clock) or until
// WakeWatchdog() moves the count away from `seen`. May return early, for no reason: callers
// re-check their own state.
void WatchdogSleepUntil(uint64_t deadline_ns, uint32_t seen) noexcept;

// Ends the current or next sleep. Async-signal-safe on Linux.
void WakeWatchdog() noexcept;

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_WATCHDOG_SLEEP_H_
