// ExitFlush: lets a process that ends with _exit() (a forked worker, Python's os._exit, a
// signal handler's last call) keep what its agent has not written yet: the hang open at that
// moment and the lag interval under way. exit() does not need it: Stop() runs from atexit.
//
// _exit() may be called from a signal handler that interrupted any code, including the agent's
// own or malloc, so the caller only sets an atomic word, wakes the watchdog's sleep (a futex,
// watchdog_sleep.h) and polls another word with nanosleep (all async-signal-safe). The watchdog
// thread, in normal context, wakes at once, writes the records as Stop() would, and answers. If
// it cannot answer within 50 ms (it is in the middle of a capture, or stuck behind a lock the
// interrupted thread holds), the caller gives up and the process exits without the records: an
// exit is never held up for longer than that, whatever the threshold.
//
// Both exits first tell the agent that the process is exiting (NoteProcessExit): on the watched
// thread, the pass under way ends there (so it is timed and enters the last lag record) and
// its hang, if it is one, is tagged "phase": "shutdown" (HangPhase::kShutdown); an exit from
// another thread cuts the watched thread's pass short instead, which stays a run-phase hang
// (it may be a real hang that another thread gave up on) and enters the last lag record with
// the time it had run.
//
// One agent per process: the state is a process-wide singleton, armed while a watchdog runs.
#ifndef HANGWATCH_AGENT_CORE_EXIT_FLUSH_H_
#define HANGWATCH_AGENT_CORE_EXIT_FLUSH_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace hangwatch::agent {

// exit() (the preload shim's atexit handler): the process is exiting, then Stop(). Normal
// context, any thread.
void StopAtProcessExit() noexcept;

// Caller side, from any thread and any context (async-signal-safe): asks the running agent's
// watchdog to write its last records and waits for it, at most 50 ms. True
// when the watchdog answered; false when no agent runs or the bound passed. Tells the agent the
// process is exiting first (NoteProcessExit).
bool FlushBeforeExit() noexcept;
// The process is exiting, called on the exiting thread (async-signal-safe). On the watched
// thread, inside a pass: the pass is noted as the shutdown pass and ends (AboutToWait()).
// Either way, the watchdog's last lag record includes a pass still running (ExitNoted()).
void NoteProcessExit() noexcept;

// Watchdog side.
// Armed by a watchdog that checks ExitFlushRequested() whenever WakeWatchdog() ends its sleep.
// `watched`: the thread whose passes the agent follows.
void ExitFlushArm(pthread_t watched) noexcept;
// The run-loop state (odd, without the timed-mode bit) of the pass the watched thread was in
// when it exited, 0 when none (StallMonitor::set_shutdown_pass). Stored before that pass ends.
const std::atomic<uint64_t>* ShutdownPassState() noexcept;
// NoteProcessExit() ran since ExitFlushArm().
bool ExitNoted() noexcept;
// No watchdog polls any more (it stopped, or this is a forked child, where it does not exist).
void ExitFlushDisarm() noexcept;
bool ExitFlushRequested() noexcept;
// The records are written: wakes the caller.
void ExitFlushDone() noexcept;

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_EXIT_FLUSH_H_
