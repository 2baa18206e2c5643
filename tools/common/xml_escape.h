// XML escaping shared by the JUnit writer and the SVG flame graph.
#ifndef HANGWATCH_TOOLS_XML_ESCAPE_H_
#define HANGWATCH_TOOLS_XML_ESCAPE_H_

#include <string>
#include <string_view>

#include "report/utf8.h"

namespace hangwatch::tools {

// Escapes the five XML special characters and drops control characters, which XML 1.0 does
// not allow (tab is kept). In an attribute a newline becomes "&#10;" so it survives attribute
// normalization; in text content it stays a newline. A byte that is not part of well-formed
// UTF-8 (report/utf8.h), and the non-characters U+FFFE and U+FFFF that XML 1.0 does not allow
// either, become U+FFFD: one odd byte in a symbol must not make the whole document invalid.
inline std::string XmlEscape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t n = report::Utf8SequenceAt(s, i);
      const std::string_view seq = s.substr(i, n);
      if (n == 0 || seq == "\xEF\xBF\xBE" || seq == "\xEF\xBF\xBF") {
        out += "\xEF\xBF\xBD";
      } else {
        out += seq;
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out.push_back(c);
    }
  }
  return out;
}

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_XML_ESCAPE_H_
