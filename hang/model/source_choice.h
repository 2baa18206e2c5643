// Which source a hang names: the rule that picks, among the sources its samples found
// (SetPassSource(), read at each sample by the watchdog's context probe), the one it keeps in
// HangContext::source. Watchdog thread only, never in a signal handler: plain copies into the
// HangContext's fixed storage, no allocation.
//
// The rule: the source in effect over the hang's longest run of consecutive samples that found
// one; of equal runs, the earlier. Not the last sample's: a pass that set a precise source for
// the work it stalled in (asio's ASIO_HANDLER_LOCATION scope) restores its enclosing operation's
// when that work returns, and a sample that lands in the moments between (the thread
// descheduled there, under load) would name the operation instead of where the time went. Not
// the source with the most samples overall either: counting every source a pass dispatched
// takes a counter per source (unbounded), where the longest run takes two buffers, the chosen
// run and the one being counted, and is exact; and a hang is one stall, whose samples are
// consecutive. A sample that found no source (cleared between two dispatches, another pass's)
// is not counted and does not break the run.
#ifndef HANGWATCH_HANG_MODEL_SOURCE_CHOICE_H_
#define HANGWATCH_HANG_MODEL_SOURCE_CHOICE_H_

#include <cstdint>

#include "hang/model/hang_context.h"

namespace hangwatch::agent {

// One sample of the hang found `source` (NUL-terminated, cut to HangContext::kTextBytes - 1;
// "" when its name could not be read) dispatched through `callback`, `queued_ms` late (-1: not
// known). The same source as the run being counted (same name and callback) lengthens it, another
// begins a new one; the run that becomes longer than the chosen one is chosen (source, callback,
// queued_ms, source_samples).
void CountSourceSample(const char* source, uint64_t callback, int64_t queued_ms, HangContext* c);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_SOURCE_CHOICE_H_
