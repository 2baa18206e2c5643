// Subcommands of the `hangwatch` command line. Each lives in its own *_command.cc and registers
// itself with a static CommandRegistration; main.cc dispatches on the first argument.
#ifndef HANGWATCH_TOOLS_COMMAND_H_
#define HANGWATCH_TOOLS_COMMAND_H_

namespace hangwatch::tools {

// Exit status for bad usage and unreadable or malformed input (one clear line on stderr).
inline constexpr int kExitUsage = 2;

struct Command {
  const char* name;     // e.g. "report"
  const char* summary;  // one line, shown by `hangwatch --help`
  // argv[0] is the subcommand's name. Returns the process exit status.
  int (*run)(int argc, char** argv);
};

// Registers a subcommand at static-initialization time.
struct CommandRegistration {
  explicit CommandRegistration(const Command& command);
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMAND_H_
