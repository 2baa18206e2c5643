// `hangwatch exporter` in the main CLI: runs `hangwatch-exporter` from the CLI's directory.
#ifndef HANGWATCH_TOOLS_EXPORTER_EXPORTER_LAUNCHER_H_
#define HANGWATCH_TOOLS_EXPORTER_EXPORTER_LAUNCHER_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kExporterLauncherCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_EXPORTER_LAUNCHER_H_
