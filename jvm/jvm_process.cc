// /proc facts of a JVM (jvm_process.h).
#include "jvm/jvm_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hangwatch::jvm {
namespace {

constexpr size_t kMaxProcText = 1 << 20;  // cmdline and environ are cut here

// A whole /proc file, at most kMaxProcText bytes; false when it cannot be opened.
bool ReadWhole(pid_t pid, const char* leaf, std::string* out) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/%s", static_cast<int>(pid), leaf);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0 || out->size() >= kMaxProcText) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// The value after "Key:\t" in a status text, up to the line's end.
bool StatusField(std::string_view status, std::string_view key, std::string_view* value) {
  size_t at = 0;
  while (at < status.size()) {
    size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    const std::string_view line = status.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      *value = line.substr(key.size() + 1);
      return true;
    }
    at = end + 1;
  }
  return false;
}

// Splits white-space separated fields.
size_t Fields(std::string_view s, std::string_view* out, size_t max) {
  size_t n = 0;
  size_t at = 0;
  while (n < max) {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
    if (at >= s.size()) break;
    size_t end = at;
    while (end < s.size() && s[end] != ' ' && s[end] != '\t') ++end;
    out[n++] = s.substr(at, end - at);
    at = end;
  }
  return n;
}

bool ParseNumber(std::string_view s, uint64_t* v, int base) {
  if (s.empty() || s.size() > 20) return false;
  char buf[24];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  char* end = nullptr;
  errno = 0;
  *v = std::strtoull(buf, &end, base);
  return errno == 0 && end == buf + s.size();
}

}  // namespace

bool ParseJvmStatus(std::string_view status, JvmProcessFacts* facts) {
  std::string_view v;
  std::string_view f[8];
  uint64_t n = 0;
  if (!StatusField(status, "SigCgt", &v) || Fields(v, f, 1) != 1 || !ParseNumber(f[0], &n, 16)) {
    return false;
  }
  facts->catches_sigquit = (n >> (3 - 1)) & 1;  // SIGQUIT is 3: bit 2
  if (!StatusField(status, "Uid", &v) || Fields(v, f, 2) != 2 || !ParseNumber(f[1], &n, 10)) {
    return false;
  }
  facts->uid = static_cast<uid_t>(n);
  if (!StatusField(status, "Gid", &v) || Fields(v, f, 2) != 2 || !ParseNumber(f[1], &n, 10)) {
    return false;
  }
  facts->gid = static_cast<gid_t>(n);
  if (!StatusField(status, "State", &v) || Fields(v, f, 1) != 1) return false;
  facts->state = f[0][0];
  facts->ns_pid = 0;
  if (StatusField(status, "NSpid", &v)) {
    const size_t count = Fields(v, f, 8);
    if (count > 0 && ParseNumber(f[count - 1], &n, 10)) facts->ns_pid = static_cast<pid_t>(n);
  }
  return true;
}

int AttachSettingIn(std::string_view options, char separator) {
  int setting = 0;
  size_t at = 0;
  while (at <= options.size()) {
    size_t end = at;
    while (end < options.size() && options[end] != separator &&
           !(separator == ' ' && (options[end] == '\t' || options[end] == '\n'))) {
      ++end;
    }
    const std::string_view option = options.substr(at, end - at);
    if (option == "-XX:+DisableAttachMechanism") setting = 1;
    if (option == "-XX:-DisableAttachMechanism") setting = -1;
    at = end + 1;
  }
  return setting;
}

bool EnvironValue(std::string_view environ, std::string_view name, std::string* value) {
  size_t at = 0;
  while (at < environ.size()) {
    size_t end = environ.find('\0', at);
    if (end == std::string_view::npos) end = environ.size();
    const std::string_view entry = environ.substr(at, end - at);
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
        entry[name.size()] == '=') {
      *value = std::string(entry.substr(name.size() + 1));
      return true;
    }
    at = end + 1;
  }
  return false;
}

void DecideAttachDisabled(std::string_view cmdline, std::string_view environ,
                          JvmProcessFacts* facts) {
  int setting = 0;
  std::string where;
  const auto consider = [&](std::string_view options, char separator, const char* name) {
    const int s = AttachSettingIn(options, separator);
    if (s != 0) {
      setting = s;
      where = name;
    }
  };
  std::string value;
  if (EnvironValue(environ, "JAVA_TOOL_OPTIONS", &value)) consider(value, ' ', "JAVA_TOOL_OPTIONS");
  if (EnvironValue(environ, "JDK_JAVA_OPTIONS", &value)) consider(value, ' ', "JDK_JAVA_OPTIONS");
  consider(cmdline, '\0', "the command line");
  if (EnvironValue(environ, "_JAVA_OPTIONS", &value)) consider(value, ' ', "_JAVA_OPTIONS");
  facts->attach_disabled = setting > 0;
  facts->attach_disabled_in = setting > 0 ? where : "";
}

bool ReadJvmProcessFacts(pid_t pid, JvmProcessFacts* facts, std::string* error) {
  *facts = JvmProcessFacts{};
  facts->pid = pid;
  std::string status;
  if (!ReadWhole(pid, "status", &status)) {
    *error = "cannot read /proc/" + std::to_string(pid) + "/status: " + std::strerror(errno);
    return false;
  }
  if (!ParseJvmStatus(status, facts)) {
    *error = "/proc/" + std::to_string(pid) + "/status: unexpected contents";
    return false;
  }
  if (facts->ns_pid == 0) facts->ns_pid = pid;  // a kernel without NSpid: one namespace
  std::string cmdline;
  std::string environ;
  ReadWhole(pid, "cmdline", &cmdline);
  facts->environ_readable = ReadWhole(pid, "environ", &environ);
  DecideAttachDisabled(cmdline, environ, facts);
  return true;
}

std::map<uint64_t, pid_t> NamespaceTids(pid_t pid) {
  std::map<uint64_t, pid_t> tids;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = opendir(path);
  if (dir == nullptr) return tids;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    uint64_t tid = 0;
    if (!ParseNumber(e->d_name, &tid, 10)) continue;
    std::string status;
    const std::string leaf = "task/" + std::string(e->d_name) + "/status";
    std::string_view nspid;
    std::string_view f[8];
    uint64_t inner = 0;
    if (ReadWhole(pid, leaf.c_str(), &status) && StatusField(status, "NSpid", &nspid)) {
      const size_t count = Fields(nspid, f, 8);
      if (count > 0 && ParseNumber(f[count - 1], &inner, 10)) {
        tids.emplace(inner, static_cast<pid_t>(tid));
      }
    }
  }
  closedir(dir);
  return tids;
}

}  // namespace hangwatch::jvm
