#include "hang/model/process_name.h"

#include <sys/types.h>

#include <string_view>

#include "unwind/proc_files.h"

namespace hangwatch::agent {
namespace {

// Reads a small /proc file whole, up to 64 KiB ("" when unreadable).
std::string ReadSmallFile(const char* path) {
  std::string out(64 * 1024 + 1, '\0');
  const ssize_t n = unwind::ReadProcFile(path, out.data(), out.size());
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

}  // namespace

std::string ProcessNameFromArgv0(const std::string& argv0) {
  std::string_view s = argv0;
  // setproctitle-style titles: "postgres: checkpointer", "nginx: worker process".
  const size_t colon = s.find(": ");
  if (colon != s.npos) s = s.substr(0, colon);
  // Titles with arguments: "/usr/bin/redis-server 127.0.0.1:6379". (A path with a space in it
  // loses its tail: rare on Linux, where titles like these are common.)
  const size_t space = s.find(' ');
  if (space != s.npos) s = s.substr(0, space);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  const size_t slash = s.rfind('/');
  if (slash != s.npos) s.remove_prefix(slash + 1);
  return std::string(s);
}

std::string ThisProcessName() {
  const std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  std::string name = ProcessNameFromArgv0(cmdline.substr(0, cmdline.find('\0')));
  if (!name.empty()) return name;
  name = ReadSmallFile("/proc/self/comm");
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

}  // namespace hangwatch::agent
