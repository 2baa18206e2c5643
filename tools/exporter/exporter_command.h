// `hangwatch exporter`: the command's entry in the command table of `hangwatch-exporter`
// (exporter_main.cc); the CLI runs that program through exporter_launcher.h.
#ifndef HANGWATCH_TOOLS_EXPORTER_EXPORTER_COMMAND_H_
#define HANGWATCH_TOOLS_EXPORTER_EXPORTER_COMMAND_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kExporterCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_EXPORTER_COMMAND_H_
