// Hang rate: seconds of hang per hour of watched time (docs/report-format.md, "Hang rate"), the
// figure Apple's Organizer and Firefox's hang reporter give. Watched time is what the lag
// records cover (each record's end_unix_ms - start_unix_ms); the hangs counted are those of the
// same processes (host and pid of a lag record), so a process without lag records adds to
// neither side. Per thread role: the hangs and lag records of one role only (a render thread's
// records would otherwise add its watched time to main's). `report` and `run` print it next to
// the lag figures.
#ifndef HANGWATCH_TOOLS_READER_HANG_RATE_H_
#define HANGWATCH_TOOLS_READER_HANG_RATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hangwatch/hang_record.h"
#include "report/report_record.h"

namespace hangwatch::tools {

struct HangRate {
  uint64_t hang_ms = 0;     // the hangs of watched processes, added up
  uint64_t hangs = 0;       // how many
  uint64_t watched_ms = 0;  // the lag records' intervals, added up
  bool known() const { return watched_ms > 0; }
  double seconds_per_hour() const {
    return known() ? 3600.0 * static_cast<double>(hang_ms) / static_cast<double>(watched_ms) : 0;
  }
};

// Of the hangs and lag records of one report (or of one process: pass its records only), of the
// threads of one role (report::RoleOrMain): a render thread's hangs and watched time are its own.
HangRate HangRateOf(const std::vector<HangRecord>& hangs, const std::vector<report::Lag>& lags,
                    std::string_view role = report::kMainRole);

// "hang rate 12.3 s/h (4.1 s of hang in 20.0 min watched)"; "" when nothing was watched.
std::string DescribeHangRate(const HangRate& rate);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_READER_HANG_RATE_H_
