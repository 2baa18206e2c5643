// A hang's context and input in words, and the one key hangs are grouped by context with: for
// `hangwatch report` (its "context:" and "input:" lines), the HTML page, `top --by context`
// and the OTLP export. docs/report-format.md ("context", "input") says what the fields are.
#ifndef HANGWATCH_REPORT_CONTEXT_TEXT_H_
#define HANGWATCH_REPORT_CONTEXT_TEXT_H_

#include <string>

#include "hangwatch/hang_record.h"

namespace hangwatch::report {

// What `top --by context` groups a hang under: its innermost label, else the source an adapter
// named, else its trigger's kind ("tcp", "timeout"...); "" for a hang without context.
std::string ContextKey(const Context& c);

// "request > thumbnail.decode; trigger tcp 127.0.0.1:40312 (python3, pid 1234); source
// timer; callback on_tick": each part when known, "" for an empty context. A path cut short
// (label_depth deeper than the labels kept) ends in " > ...".
std::string DescribeContext(const Context& c);

// "3 input events waited (key, motion), oldest 1.2 s; perceived", "no input waited;
// perceived: no", "...; not responding": "" when nothing is known (no display connection, no
// verdict). A perceived verdict not known adds nothing.
std::string DescribeInput(const HangRecord& h);

// 1200 -> "1.2 s", 800 -> "800 ms".
std::string WaitText(uint64_t ms);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_CONTEXT_TEXT_H_
