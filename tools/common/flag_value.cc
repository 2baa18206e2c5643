#include "tools/common/flag_value.h"

namespace hangwatch::tools {

bool FlagValue(int argc, char** argv, int* i, std::string_view flag, std::string* value,
               bool* inline_value) {
  const std::string_view a = argv[*i];
  if (a == flag) {
    if (*i + 1 >= argc) return false;
    *value = argv[++*i];
    if (inline_value != nullptr) *inline_value = false;
    return true;
  }
  if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
    *value = std::string(a.substr(flag.size() + 1));
    if (inline_value != nullptr) *inline_value = true;
    return true;
  }
  return false;
}

}  // namespace hangwatch::tools
