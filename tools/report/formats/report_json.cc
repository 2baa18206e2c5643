// FormatJsonLines: the records again as JSON Lines, through the report codec (after offline
// symbolization: now with files and lines).
#include <string>

#include "report/report_record.h"
#include "tools/report/formats/report_formats.h"

namespace hangwatch::tools {

std::string FormatJsonLines(const Report& report) {
  std::string out;
  for (const StartupStall& s : report.startup_stalls) {
    out += report::Encode(s);
    out.push_back('\n');
  }
  for (const HangRecord& h : report.hangs) {
    out += report::Encode(h);
    out.push_back('\n');
  }
  for (const Lag& l : report.lags) {
    out += report::Encode(l);
    out.push_back('\n');
  }
  return out;
}

}  // namespace hangwatch::tools
