#include "agent/core/labels.h"

#include <stdlib.h>
#include <unistd.h>

namespace hangwatch::agent {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

const char* LabelsVariable() {
#if defined(__APPLE__)
  return issetugid() ? nullptr : getenv("HANGWATCH_LABELS");
#else
  return secure_getenv("HANGWATCH_LABELS");
#endif
}

bool ParseLabels(std::string_view text, std::map<std::string, std::string>* out,
                 std::string* error) {
  while (!Trim(text).empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = Trim(text.substr(0, comma));
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    if (entry.empty()) continue;  // "a=1,,b=2"
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || Trim(entry.substr(0, eq)).empty()) {
      *error = "label '" + std::string(entry) + "' is not key=value";
      return false;
    }
    (*out)[std::string(Trim(entry.substr(0, eq)))] = std::string(Trim(entry.substr(eq + 1)));
  }
  return true;
}

std::string HostName() {
  char buf[256];
  if (gethostname(buf, sizeof(buf)) != 0) return "";
  buf[sizeof(buf) - 1] = '\0';
  return buf;
}

}  // namespace hangwatch::agent
