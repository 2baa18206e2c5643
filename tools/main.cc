// `hangwatch`: the command table. Each command is a library in tools/<command>/ (README.md);
// this is the one place that names them all.
#include <iterator>

#include "tools/common/command.h"
#include "tools/export/export_command.h"
#include "tools/exporter/exporter_launcher.h"
#include "tools/gate/gate_command.h"
#include "tools/report/report_command.h"
#include "tools/run/run_command.h"
#include "tools/snapshot/snapshot_command.h"
#include "tools/symbolize/symbolize_command.h"
#include "tools/symbolize/symbols_command.h"
#include "tools/top/top_launcher.h"

namespace {

using hangwatch::tools::Command;

// In the order `hangwatch --help` lists them.
const Command* const kCommands[] = {
    &hangwatch::tools::kExportCommand,      &hangwatch::tools::kExporterLauncherCommand,
    &hangwatch::tools::kGateCommand,        &hangwatch::tools::kReportCommand,
    &hangwatch::tools::kRunCommand,         &hangwatch::tools::kSnapshotCommand,
    &hangwatch::tools::kSymbolizeCommand,   &hangwatch::tools::kSymbolsCommand,
    &hangwatch::tools::kTopLauncherCommand,
};

}  // namespace

int main(int argc, char** argv) {
  return hangwatch::tools::RunCommandTable(kCommands, std::size(kCommands), argc, argv);
}
