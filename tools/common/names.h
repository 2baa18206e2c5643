// How every command names a source place in what it prints. A file's and a process's names are
// report::ModuleFileName and report::ProcessName (report/names.h), which the writers use too.
#ifndef HANGWATCH_TOOLS_COMMON_NAMES_H_
#define HANGWATCH_TOOLS_COMMON_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace hangwatch::tools {

// "file:line", "file" without a line (0 or less), "" without a file.
std::string FileLine(std::string_view file, int64_t line);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMON_NAMES_H_
