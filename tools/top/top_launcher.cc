// `hangwatch top` in the main CLI: runs `hangwatch-top`, the program beside it that holds the
// command (top_command.cc). `top` parsed with simdjson, which Debian ships as a shared library
// only, so it became a program of its own; it now scans with report/record_scan.h, as every
// command does, and the program stays apart until it joins the static CLI.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/top/top_launcher.h"
#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

int Run(int argc, char** argv) {
  char exe[4096];
  const ssize_t n = unwind::ReadExePath(exe, sizeof exe);
  std::string path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  path = path.substr(0, path.rfind('/') + 1) + "hangwatch-top";
  std::vector<char*> args;
  args.push_back(path.data());
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);  // argv[0] is "top"
  args.push_back(nullptr);
  execv(path.c_str(), args.data());
  std::fprintf(stderr, "hangwatch top: cannot run %s: %s\n", path.c_str(), std::strerror(errno));
  return kExitUsage;
}

}  // namespace

const Command kTopLauncherCommand = {
    "top", "what hangs most across many reports, hosts and processes (grouped, with culprits)",
    Run};
}  // namespace hangwatch::tools
