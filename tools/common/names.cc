#include "tools/common/names.h"

namespace hangwatch::tools {

std::string FileLine(std::string_view file, int64_t line) {
  if (file.empty()) return "";
  std::string out(file);
  if (line > 0) out += ":" + std::to_string(line);
  return out;
}

}  // namespace hangwatch::tools
