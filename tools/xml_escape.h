// XML escaping shared by the JUnit writer and the SVG flame graph.
#ifndef HANGWATCH_TOOLS_XML_ESCAPE_H_
#define HANGWATCH_TOOLS_XML_ESCAPE_H_

#include <string>
#include <string_view>

namespace hangwatch::tools {

// Escapes the five XML special characters and drops control characters, which XML 1.0 does
// not allow (tab is kept). In an attribute a newline becomes "&#10;" so it survives attribute
// normalization; in text content it stays a newline.
inline std::string XmlEscape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
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
