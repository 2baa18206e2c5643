// The watchdog's own readings of the clocks, for what it stamps (a lag record's interval, a hang
// read at start-up): CLOCK_MONOTONIC in ns and the wall clock in ms since the Unix epoch. The
// pass timings the watched threads take are not these (hangwatch/internal/pass_timer.h), nor
// the ones a test's fake environment gives (watchdog_env.h).
#ifndef HANGWATCH_AGENT_CORE_CLOCK_NOW_H_
#define HANGWATCH_AGENT_CORE_CLOCK_NOW_H_

#include <chrono>
#include <cstdint>

namespace hangwatch::agent {

inline uint64_t MonotonicNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

inline int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_CLOCK_NOW_H_
