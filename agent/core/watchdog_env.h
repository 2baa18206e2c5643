// WatchdogEnv: the clocks and process facts the watchdog reads. An interface so that the stall
// logic runs, in tests, against a fake clock that makes every duration exact.
#ifndef HANGWATCH_AGENT_CORE_WATCHDOG_ENV_H_
#define HANGWATCH_AGENT_CORE_WATCHDOG_ENV_H_

#include <cstdint>
#include <memory>

#include "agent/core/pass_timer.h"
#include "unwind/thread_capture.h"

namespace hangwatch::agent {

class WatchdogEnv {
 public:
  virtual ~WatchdogEnv() = default;
  // CLOCK_MONOTONIC: all durations. It does not advance while the machine is suspended.
  virtual uint64_t MonotonicNs() = 0;
  // CLOCK_BOOTTIME: advances during suspend; the difference with MonotonicNs() is suspend time.
  virtual uint64_t BoottimeNs() = 0;
  // Wall clock, for start_unix_ms only.
  virtual int64_t UnixMs() = 0;
  // CPU time consumed so far by `thread`; false when it cannot be read (thread gone).
  virtual bool ThreadCpuNs(const unwind::ThreadInfo& thread, uint64_t* out) = 0;
  // Scheduler state letter of `thread` (R, S, D, T, ...), '?' when unknown.
  virtual char SchedState(const unwind::ThreadInfo& thread) = 0;
  // `thread` has ended: a main thread that called pthread_exit() stays a zombie ('Z') while the
  // process lives; another thread's entry goes. False when unknown.
  virtual bool ThreadExited(const unwind::ThreadInfo& thread) {
    const char state = SchedState(thread);
    return state == 'Z' || state == 'X';
  }
  // A tracer (debugger) is attached to this process (TracerPid in /proc/self/status).
  virtual bool DebuggerAttached() = 0;
  // The CALLING thread's (the watchdog's) total time on a CPU and total time runnable but
  // waiting for one (/proc/thread-self/schedstat). Whatever part of a wall-clock interval is
  // neither, nor planned sleep, nor a bounded wait, the thread could not run at all: the
  // process was stopped. False when unavailable.
  virtual bool OwnSchedStat(uint64_t* cpu_ns, uint64_t* run_delay_ns) = 0;
  // With Config::time_every_pass: the duration the thread of `loop` measured for the pass of
  // run-loop state `state` (pass_timer.h), and how long its current pass has run so far.
  virtual bool MeasuredPassNs(const RunLoopWord& loop, uint64_t state, uint64_t* ns) {
    return agent::MeasuredPassNs(*loop.timer, state, ns);
  }
  virtual bool RunningPassNs(const RunLoopWord& loop, uint64_t state, uint64_t* ns) {
    return agent::RunningPassNs(*loop.state, *loop.timer, state, ns);
  }
  // The kernel's name of `thread` (comm, at most 15 bytes) into `out` (16 bytes); false when
  // it cannot be read.
  virtual bool ThreadName(const unwind::ThreadInfo& thread, char out[16]) {
    (void)thread;
    (void)out;
    return false;
  }
};

// The real thing: clock_gettime, /proc/self/task/TID/stat, /proc/self/status.
std::unique_ptr<WatchdogEnv> MakeSystemWatchdogEnv();

// Names the calling thread (the watchdog) "hangwatch" for ps -L, top -H and debuggers. Here
// because, like the env, it is one definition per platform: Linux names any thread, Darwin only
// the calling one.
void NameWatchdogThread();

// Reads the state letter of /proc/self/task/TID/stat; '?' on any failure.
char ReadSchedState(pid_t tid);
// Reads TracerPid from /proc/self/status; 0 when none or unreadable.
long ReadTracerPid();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_WATCHDOG_ENV_H_
