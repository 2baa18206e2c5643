// `hangwatch gate`: the command's entry in the command table (tools/main.cc).
#ifndef HANGWATCH_TOOLS_GATE_GATE_COMMAND_H_
#define HANGWATCH_TOOLS_GATE_GATE_COMMAND_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kGateCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_GATE_GATE_COMMAND_H_
