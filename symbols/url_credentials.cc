#include "symbols/url_credentials.h"

namespace hangwatch::symbols {

std::string RedactUrlCredentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (size_t scheme; (scheme = text.find("://", at)) != std::string_view::npos;) {
    const size_t start = scheme + 3;
    const size_t end = text.find_first_of("/?# \t\r\n\"'<>", start);
    const std::string_view authority =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out.append(text.substr(at, start - at));
    const size_t last_at = authority.rfind('@');
    if (last_at == std::string_view::npos) {
      out.append(authority);
    } else {
      out.append("***");
      out.append(authority.substr(last_at));
    }
    at = start + authority.size();
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace hangwatch::symbols
