#include "integrations/preload/thread_selection.h"

#include <algorithm>

namespace hangwatch::preload {

bool GlobMatches(std::string_view pattern, std::string_view name) {
  // Iterative, with one backtracking point (the last `*`): linear enough for 15-byte names.
  size_t p = 0, n = 0, star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool ThreadSelection::Selects(std::string_view name) const {
  switch (mode) {
    case Mode::kMain:
      return false;
    case Mode::kLoops:
      return true;
    case Mode::kNamed:
      return std::any_of(patterns.begin(), patterns.end(),
                         [name](const std::string& p) { return GlobMatches(p, name); });
  }
  return false;
}

bool ParseThreadSelection(std::string_view value, ThreadSelection* out, std::string* error) {
  ThreadSelection s;
  if (value.empty()) {
    *error = "is empty (main, loops, or thread-name patterns such as gdbus,io-*)";
    return false;
  }
  if (value == "main" || value == "loops") {
    s.mode = value == "main" ? ThreadSelection::Mode::kMain : ThreadSelection::Mode::kLoops;
    *out = std::move(s);
    return true;
  }
  s.mode = ThreadSelection::Mode::kNamed;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view p = value.substr(start, comma - start);
    start = comma + 1;
    if (p.empty()) {
      *error = "has an empty pattern (a comma too many)";
      return false;
    }
    if (p == "loops") {
      *error = "mixes loops with thread-name patterns (loops already takes every loop thread)";
      return false;
    }
    for (const char c : p) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        *error = "has a control character in a pattern";
        return false;
      }
    }
    if (static_cast<size_t>(p.size() - std::count(p.begin(), p.end(), '*')) > kMaxThreadNameBytes) {
      *error = "has a pattern no thread name matches: '" + std::string(p) +
               "' is longer than a thread name (15 bytes)";
      return false;
    }
    if (p != "main") s.patterns.emplace_back(p);
  }
  // Only `main` named: the main thread alone.
  if (s.patterns.empty()) s.mode = ThreadSelection::Mode::kMain;
  *out = std::move(s);
  return true;
}

}  // namespace hangwatch::preload
