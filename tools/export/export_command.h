// `hangwatch export`: the command's entry in the command table (tools/main.cc).
#ifndef HANGWATCH_TOOLS_EXPORT_EXPORT_COMMAND_H_
#define HANGWATCH_TOOLS_EXPORT_EXPORT_COMMAND_H_

#include "tools/common/command.h"

namespace hangwatch::tools {

extern const Command kExportCommand;

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORT_EXPORT_COMMAND_H_
