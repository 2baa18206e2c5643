// Config (include/hangwatch/hangwatch.h) checked, and turned into what the watchdog works with:
// the StallMonitor's options in nanoseconds, with the defaults that follow from the threshold.
#ifndef HANGWATCH_AGENT_CORE_CONFIG_OPTIONS_H_
#define HANGWATCH_AGENT_CORE_CONFIG_OPTIONS_H_

#include "agent/core/stall_monitor.h"
#include "hangwatch/hangwatch.h"

namespace hangwatch::agent {

// Ok, or the first setting out of range, named in one line.
Status Validate(const Config& c);

// The monitor's options for a valid `c` (sample and check intervals derived from the threshold
// when left at 0); pid is this process's.
MonitorOptions OptionsFrom(const Config& c);
// The options of a thread watched through WatchThread() (hangwatch/threads.h): its own threshold
// and sample interval where given (0: the config's), the check interval and early-sampling
// point derived from them as for the main thread.
MonitorOptions OptionsForThread(const Config& c, uint64_t threshold_ns,
                                uint64_t sample_interval_ns);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_CONFIG_OPTIONS_H_
