// ToJsonLine (include/hangwatch/hangwatch.h): the public name of the report codec's hang encoder
// (report/report_record.h). Below the agent, with the JSON Lines writer, so that a program that
// appends records (`hangwatch run`'s fatal hangs) links neither the agent nor spdlog.
#include "hangwatch/hangwatch.h"
#include "report/report_record.h"

namespace hangwatch {

std::string ToJsonLine(const HangRecord& record) { return report::Encode(record); }

}  // namespace hangwatch
