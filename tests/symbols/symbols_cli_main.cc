// The `symbolize` and `symbols` subcommands as a program of their own, for the symbols tests:
// the same commands (tools/symbolize) as in `hangwatch`, without the rest of the command line.
#include <iterator>

#include "tools/common/command.h"
#include "tools/symbolize/symbolize_command.h"
#include "tools/symbolize/symbols_command.h"

int main(int argc, char** argv) {
  const hangwatch::tools::Command* const commands[] = {&hangwatch::tools::kSymbolizeCommand,
                                                       &hangwatch::tools::kSymbolsCommand};
  return hangwatch::tools::RunCommandTable(commands, std::size(commands), argc, argv);
}
