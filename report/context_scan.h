// A hang's "context" and "input" read from their raw text (record_scan.h keeps them): checked
// by the decoder's rules (context_decode.cc: each member of its type and range) and, when
// asked, filled in. The scanner checks them this way (ValueKind::kContext, kInput), so that
// every reader puts a line in the same class; `top` and the Prometheus exporter read a
// context's members through here without decoding the line.
#ifndef HANGWATCH_REPORT_CONTEXT_SCAN_H_
#define HANGWATCH_REPORT_CONTEXT_SCAN_H_

#include <string_view>

#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// False when `raw` (a value the scanner found well formed) is not a context object by the
// format's rules. *out (may be null) is filled as the decoder would fill it.
bool ScanContext(std::string_view raw, Context* out);
// The same for "input".
bool ScanInput(std::string_view raw, Input* out);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_CONTEXT_SCAN_H_
