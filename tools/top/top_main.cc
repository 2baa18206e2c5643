// `hangwatch-top`: the program behind `hangwatch top` (top_launcher.cc says why it is one of its
// own), with a command table of one.
#include <iterator>

#include "tools/common/command.h"
#include "tools/top/top_command.h"

int main(int argc, char** argv) {
  const hangwatch::tools::Command* const commands[] = {&hangwatch::tools::kTopCommand};
  return hangwatch::tools::RunCommandTable(commands, std::size(commands), argc, argv);
}
