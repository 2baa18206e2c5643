// `hangwatch`: dispatches to the registered subcommands (see command.h).
#include <cstdio>
#include <cstring>
#include <vector>

#include "tools/command.h"
#include "tools/terminal_text.h"

namespace hangwatch::tools {
namespace {

std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: hangwatch COMMAND [ARGS...]\n\ncommands:\n");
  for (const Command& c : Registry()) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`hangwatch COMMAND --help` describes one command.\n");
}

}  // namespace

CommandRegistration::CommandRegistration(const Command& command) { Registry().push_back(command); }

}  // namespace hangwatch::tools

int main(int argc, char** argv) {
  using hangwatch::tools::Registry;
  if (argc < 2) {
    hangwatch::tools::PrintUsage(stderr);
    return hangwatch::tools::kExitUsage;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    hangwatch::tools::PrintUsage(stdout);
    return 0;
  }
  for (const auto& c : Registry()) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "hangwatch: unknown command '%s' (try hangwatch --help)\n",
               hangwatch::tools::EscapeForTerminal(argv[1]).c_str());
  return hangwatch::tools::kExitUsage;
}
