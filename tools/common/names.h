// How every command names a file, a process and a source place in what it prints.
#ifndef HANGWATCH_TOOLS_COMMON_NAMES_H_
#define HANGWATCH_TOOLS_COMMON_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace hangwatch::tools {

// The file name of a path ("/usr/lib/libc.so.6" -> "libc.so.6"): report::ModuleFileName, the
// one definition, as a string.
std::string BaseName(std::string_view path);

// A process as people know it: the name it recorded (its comm, a rewritten title), else the
// file name of its executable; "" when neither is known.
std::string ProcessName(std::string_view process_name, std::string_view executable);

// "file:line", "file" without a line (0 or less), "" without a file.
std::string FileLine(std::string_view file, int64_t line);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMON_NAMES_H_
