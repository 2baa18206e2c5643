// ToJsonLine (include/hangwatch/hangwatch.h): the public name of the report codec's hang encoder
// (report/report_record.h). In a file of its own, so that a program that uses only this (the
// CLI, linked from static archives) does not pull in agent.cc and, with it, spdlog.
#include "hangwatch/hangwatch.h"
#include "report/report_record.h"

namespace hangwatch {

std::string ToJsonLine(const HangRecord& record) { return report::Encode(record); }

}  // namespace hangwatch
