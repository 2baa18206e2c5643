// `hangwatch top (the CLI: runs hangwatch-top)`: the command's entry in the command table
// (tools/main.cc).
#ifndef HANGWATCH_TOOLS_TOP_TOP_LAUNCHER_H_
#define HANGWATCH_TOOLS_TOP_TOP_LAUNCHER_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kTopLauncherCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_TOP_LAUNCHER_H_
