// RunCommandTable: the dispatch both programs of the command line share.
#include "tools/common/command.h"

#include <cstdio>
#include <cstring>

#include "tools/common/terminal_text.h"

namespace hangwatch::tools {
namespace {

void PrintUsage(FILE* out, const Command* const* commands, size_t count) {
  std::fprintf(out, "usage: hangwatch COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < count; ++i) {
    std::fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  }
  std::fprintf(out, "\n`hangwatch COMMAND --help` describes one command.\n");
}

}  // namespace

int RunCommandTable(const Command* const* commands, size_t count, int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr, commands, count);
    return kExitUsage;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintUsage(stdout, commands, count);
    return 0;
  }
  for (size_t i = 0; i < count; ++i) {
    if (std::strcmp(argv[1], commands[i]->name) == 0) return commands[i]->run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "hangwatch: unknown command '%s' (try hangwatch --help)\n",
               EscapeForTerminal(argv[1]).c_str());
  return kExitUsage;
}

}  // namespace hangwatch::tools
