// libFuzzer target: the launch log reader (tools/run/launch_log_reader.h), which `hangwatch run`
// applies to lines that every process under it (any program the command runs) appended. The
// input is the log; what parses is summarized the way `run` does (when nothing was watched, the
// programs that ran without the shim, the launch tree of --explain). The same bytes are also read
// as a /proc/PID/stat text.
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/run/launch_log_reader.h"
#include "tools/run/launch_tree.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::tools;  // NOLINT(build/namespaces)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const LaunchLog log = ParseLaunchLog(text);
  for (const LaunchProcess& p : log.processes) {
    if (p.images.empty()) __builtin_trap();  // Last() relies on it
    (void)p.ArmedImage();
    if (log.Find(p.pid) == nullptr) __builtin_trap();
    if (const LaunchExec* exec = p.Became(); exec != nullptr && exec->spawn) __builtin_trap();
  }
  if (!log.AnyArmed()) {
    const int64_t root = log.processes.empty() ? 1 : log.processes.back().pid;
    (void)ExplainNothingWatched(log, root, "/nonexistent/fuzz-command", "");
  }
  (void)FormatUnwatchedExecs(UnwatchedExecs(log), 5);
  const int64_t first = log.processes.empty() ? 1 : log.processes.front().pid;
  (void)FormatLaunchTree(log, first, "/nonexistent/fuzz-command", "");
  (void)ParseProcStat(text);
  return 0;
}
