// `hangwatch-exporter`: the program behind `hangwatch exporter` (exporter_launcher.cc says why it
// is one of its own), with a command table of one.
#include <iterator>

#include "tools/common/command.h"
#include "tools/exporter/exporter_command.h"

int main(int argc, char** argv) {
  const hangwatch::tools::Command* const commands[] = {&hangwatch::tools::kExporterCommand};
  return hangwatch::tools::RunCommandTable(commands, std::size(commands), argc, argv);
}
