#include "tools/common/names.h"

#include "report/frame_classifier.h"

namespace hangwatch::tools {

std::string BaseName(std::string_view path) { return std::string(report::ModuleFileName(path)); }

std::string ProcessName(std::string_view process_name, std::string_view executable) {
  return process_name.empty() ? BaseName(executable) : std::string(process_name);
}

std::string FileLine(std::string_view file, int64_t line) {
  if (file.empty()) return "";
  std::string out(file);
  if (line > 0) out += ":" + std::to_string(line);
  return out;
}

}  // namespace hangwatch::tools
