// `hangwatch run`: the command's entry in the command table (tools/main.cc).
#ifndef HANGWATCH_TOOLS_RUN_RUN_COMMAND_H_
#define HANGWATCH_TOOLS_RUN_RUN_COMMAND_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kRunCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_RUN_COMMAND_H_
