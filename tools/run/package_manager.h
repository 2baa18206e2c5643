// Package managers that run a project's scripts (npm, npx, yarn, pnpm), told from the command
// line a program image was executed with, as the launch log records it: `hangwatch run` treats
// one that runs a script as a wrapper of what the script runs (run_program.h).
#ifndef HANGWATCH_TOOLS_RUN_PACKAGE_MANAGER_H_
#define HANGWATCH_TOOLS_RUN_PACKAGE_MANAGER_H_

#include <string>

#include "tools/run/launch_log_reader.h"

namespace hangwatch::tools {

// `image`, executed with `command_line`, is a package manager running a script (npm start, npm
// test, npm run X, npm exec, npx, yarn X, pnpm X): node running npm's script (or the command
// itself, when node was its interpreter) with a command that does not install packages. Its
// name, else "".
std::string ScriptRunner(const LaunchImage& image, const std::string& command_line);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_PACKAGE_MANAGER_H_
