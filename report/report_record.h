// The records of a JSON Lines report (docs/report-format.md) and their encoders: the one place
// that writes the format. The agent (hang sinks), the preload shim (start-up stalls) and the
// tools (`hangwatch report --format json`, `hangwatch run`) all encode through here; the
// matching decoder is report/report_decode.h.
//
// Standard library only: the agent has no JSON library, and libhangwatch's dependencies stay
// short. Encoding allocates, so it runs on the watchdog thread (or in the shim and the tools),
// never on the capture path.
#ifndef HANGWATCH_REPORT_REPORT_RECORD_H_
#define HANGWATCH_REPORT_REPORT_RECORD_H_

#include <cstdint>
#include <string>

#include "hangwatch/hang_record.h"
#include "hangwatch/pass_histogram.h"
#include "report/record_types.h"

namespace hangwatch::report {

// {"type":"hang"}: hangwatch::HangRecord (include/hangwatch/hang_record.h), field for field.

// {"type":"startup_stall"}: the main thread reached its event loop late (preload shim).
struct StartupStall {
  int64_t pid = 0;
  std::string process;        // path of the main executable
  int64_t start_unix_ms = 0;  // when the shim was loaded
  uint64_t duration_ms = 0;   // from then to the first blocking wait
  uint64_t threshold_ms = 0;  // HANGWATCH_STARTUP_MS
};

// {"type":"lag"}: hangwatch::LagRecord (include/hangwatch/pass_histogram.h), the type that
// AddLagCallback() hands to callbacks, under the name the codec's other record types use.
using Lag = LagRecord;

// One record as one line, without the trailing newline. A new record type is one more struct
// above and one more overload here (and its decoder in report_decode.cc).
std::string Encode(const HangRecord& record);
std::string Encode(const StartupStall& record);
std::string Encode(const Lag& record);

// Lag figures in one line of text, for people: "3611 passes (busy 9.8 s), p50 1.00 ms, p95
// 20.05 ms, p99 40.11 ms, max 40.1 ms; slow: 100 > 16 ms, 20 > 33 ms". The spdlog sink's lag
// line and the tools' summaries.
std::string DescribeLag(const LagFigures& figures);

// A lag record's queued + running histogram (LagRecord::delay): its own when it counted passes
// with a known wait, else its passes (each pass counts at its duration).
inline const PassHistogram& DelayOf(const Lag& l) {
  return l.queued_passes > 0 ? l.delay : l.passes;
}
// Adds `from`'s passes into `into` (records of one role: a reader's running total), the
// queued + running histogram with them when either counted a pass with a known wait.
void AddLag(Lag* into, const Lag& from);
// "queued + running (412 passes had waited): p50 1.10 ms, p99 250.3 ms, max 702.0 ms" for the
// delay figures `f` of passes of which `queued` had a known wait; "; 3 more that had waited were
// counted at their own time (the agent read them too late)" when `lost`.
std::string DescribeDelay(const LagFigures& f, uint64_t queued, uint64_t lost = 0);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_REPORT_RECORD_H_
