#include "report/utf8.h"

namespace hangwatch::report {

size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
  }
  // No overlong forms, surrogates or values past U+10FFFF.
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  const bool bad = (n == 2 && c < 0xc2) || (n == 3 && c == 0xe0 && c1 < 0xa0) ||
                   (n == 3 && c == 0xed && c1 >= 0xa0) || (n == 4 && c == 0xf0 && c1 < 0x90) ||
                   (n == 4 && (c > 0xf4 || (c == 0xf4 && c1 >= 0x90)));
  return bad ? 0 : n;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs are the common case: no sequence check per byte.
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace hangwatch::report
