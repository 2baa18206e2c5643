// `hangwatch top (hangwatch-top)`: the command's entry in the command table (tools/main.cc).
#ifndef HANGWATCH_TOOLS_TOP_TOP_COMMAND_H_
#define HANGWATCH_TOOLS_TOP_TOP_COMMAND_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kTopCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TOP_TOP_COMMAND_H_
