// Reading reports for the gate, which needs of most hang records only their signature and
// duration: each line is scanned (report/record_scan.h: its JSON structure and top-level fields
// checked by the format's reading rules, without decoding it), hangs are tallied per signature,
// and only the longest hang of each signature is decoded in full (report/report_decode.h), to
// name and symbolize it. Lag records are added into one histogram from what the scanner read;
// start-up stalls, records of unknown types or versions, open-hang files and hang records
// without a signature are decoded in full. A hundred thousand hangs of a thousand signatures
// cost a thousand decodes (bench/gate_bench.cc).
//
// A hang whose nested values (frames, timeline, modules) are malformed is counted, as `top`
// and the exporter count it (the reading rules' rule 5); when it is the longest of its
// signature every file is read again with the report reader, which skips it.
#ifndef HANGWATCH_TOOLS_GATE_READER_H_
#define HANGWATCH_TOOLS_GATE_READER_H_

#include <map>
#include <string>
#include <vector>

#include "tools/gate/gate_verdict.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// Reads report files (JSON Lines or open-hang files) into *out, whose hangs are one record per
// signature and phase (shutdown or not: the gate judges them apart; the longest) followed by every
// hang without a signature, with *tallies parallel to out->hangs. The lag records of each thread
// role are added together into one record of out->lags as they are read (never across roles);
// *lag_records counts them, *lag_records_by_role (when given) per role. False with a one-line
// *error for a file that is missing, unreadable, or has content but no valid record.
bool ReadReportsForGate(const std::vector<std::string>& paths, Report* out,
                        std::vector<HangTally>* tallies, size_t* lag_records, std::string* error,
                        std::map<std::string, size_t>* lag_records_by_role = nullptr);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_READER_H_
