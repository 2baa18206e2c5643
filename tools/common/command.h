// Subcommands of the `hangwatch` command line. Each lives in tools/<command>/ and exports its
// Command (tools/<command>/<command>_command.h); tools/main.cc lists them in a table, in the
// order `hangwatch --help` shows them.
#ifndef HANGWATCH_TOOLS_COMMON_COMMAND_H_
#define HANGWATCH_TOOLS_COMMON_COMMAND_H_

#include <cstddef>

namespace hangwatch::tools {

// Exit status for bad usage and unreadable or malformed input (one clear line on stderr).
inline constexpr int kExitUsage = 2;

struct Command {
  const char* name;     // e.g. "report"
  const char* summary;  // one line, shown by `hangwatch --help`
  // argv[0] is the subcommand's name. Returns the process exit status.
  int (*run)(int argc, char** argv);
};

// main() of a program made of `commands` (`hangwatch`, `hangwatch-top`): dispatches on argv[1],
// prints the usage for none or --help, one line and kExitUsage for an unknown command.
int RunCommandTable(const Command* const* commands, size_t count, int argc, char** argv);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMON_COMMAND_H_
