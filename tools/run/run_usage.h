// The text of `hangwatch run --help`: what run does before the gate's flags (kRunUsage) and after
// them (kRunUsageTail); the gate's own part is tools/gate/gate_options.h's kGateFlagsUsage.
#ifndef HANGWATCH_TOOLS_RUN_RUN_USAGE_H_
#define HANGWATCH_TOOLS_RUN_RUN_USAGE_H_

namespace hangwatch::tools {

extern const char kRunUsage[];
extern const char kRunUsageTail[];

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_RUN_USAGE_H_
