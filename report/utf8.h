// The report format's one rule for bytes that are not UTF-8 (docs/report-format.md, "Text"):
// every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF) becomes U+FFFD, the replacement character. Program paths,
// argv[0], labels, host names and symbols are bytes the agent does not choose; a JSON reader
// rejects a line with one invalid byte, so without this rule one odd byte hides a whole hang.
// The encoder applies it to every string it writes; the decoder applies it to each line before
// parsing, so lines written by older agents with raw bytes are read too.
#ifndef HANGWATCH_REPORT_UTF8_H_
#define HANGWATCH_REPORT_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace hangwatch::report {

// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when the byte there
// does not start one.
size_t Utf8SequenceAt(std::string_view s, size_t i);

// True when `s` is entirely well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// `s` with each byte that is not part of a well-formed sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_UTF8_H_
