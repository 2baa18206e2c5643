// `hangwatch exporter` in the main CLI: runs `hangwatch-exporter`, the program beside it that
// holds the command (exporter_command.cc). The exporter serves HTTP through Debian's
// prometheus-cpp, which ships shared libraries only: kept in a program of its own, it leaves the
// other commands a static binary (as `top` does, tools/top/top_launcher.cc), and a build without
// prometheus-cpp still has every other command.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/exporter/exporter_launcher.h"
#include "unwind/proc_files.h"

namespace hangwatch::tools {
namespace {

int Run(int argc, char** argv) {
#if !HANGWATCH_EXPORTER_BUILT
  (void)argc;
  (void)argv;
  std::fprintf(stderr,
               "hangwatch exporter: not built (prometheus-cpp was not found when hangwatch was "
               "built; Debian: prometheus-cpp-dev)\n");
  return kExitUsage;
#else
  char exe[4096];
  const ssize_t n = unwind::ReadExePath(exe, sizeof exe);
  std::string path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  path = path.substr(0, path.rfind('/') + 1) + "hangwatch-exporter";
  std::vector<char*> args;
  args.push_back(path.data());
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);  // argv[0] is "exporter"
  args.push_back(nullptr);
  execv(path.c_str(), args.data());
  std::fprintf(stderr, "hangwatch exporter: cannot run %s: %s\n", path.c_str(),
               std::strerror(errno));
  return kExitUsage;
#endif
}

}  // namespace

const Command kExporterLauncherCommand = {
    "exporter", "serve the hangs and lag of reports as Prometheus metrics (/metrics)", Run};

}  // namespace hangwatch::tools
