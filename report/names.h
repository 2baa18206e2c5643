// How the report's readers and writers name a file and a process: the project's one base-name
// function and its one rule for a process's name. Header only, so that the fast scanners and
// every writer use them without a call.
#ifndef HANGWATCH_REPORT_NAMES_H_
#define HANGWATCH_REPORT_NAMES_H_

#include <string_view>

namespace hangwatch::report {

// The file name of a path, what follows its last '/' or '\\' (a Python file compiled on
// Windows): "libc.so.6" for "/usr/lib/x86_64-linux-gnu/libc.so.6".
constexpr std::string_view ModuleFileName(std::string_view module) {
  const size_t slash = module.find_last_of("/\\");
  return slash == module.npos ? module : module.substr(slash + 1);
}

// A process as people know it: the name it recorded (`process_name`: its argv[0]'s file name,
// else its comm), else the file name of its executable (records of older agents); "" when
// neither is known.
constexpr std::string_view ProcessName(std::string_view process_name, std::string_view executable) {
  return process_name.empty() ? ModuleFileName(executable) : process_name;
}

}  // namespace hangwatch::report

#endif  // HANGWATCH_REPORT_NAMES_H_
