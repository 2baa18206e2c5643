// The interest list of an epoll descriptor as /proc/PID/fdinfo/EPFD prints it, one entry a
// line: "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x". Read by the wait
// decoder (wait_fds.cc: what a blocked epoll_wait waits on) and by the agent's context probe
// (which descriptor an epoll event's data word names). No allocation; libc only.
#ifndef HANGWATCH_CAUSE_EPOLL_FDINFO_H_
#define HANGWATCH_CAUSE_EPOLL_FDINFO_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace hangwatch::cause {

struct EpollEntry {
  int fd = -1;          // the registered descriptor
  uint32_t events = 0;  // its EPOLL* mask
  uint64_t data = 0;    // the event's data word
  uint64_t inode = 0;   // the registered file's inode (0: not printed)
};

namespace epoll_fdinfo_internal {
// The value after `key` on the line [from, line_end), parsed in `base`; false when absent.
inline bool Field(const char* from, const char* line_end, const char* key, int base,
                  uint64_t* out) {
  const char* at = std::strstr(from, key);
  if (at == nullptr || (line_end != nullptr && at > line_end)) return false;
  *out = std::strtoull(at + std::strlen(key), nullptr, base);
  return true;
}
}  // namespace epoll_fdinfo_internal

// Calls f(entry) for each entry of the NUL-terminated fdinfo `text`, in order, until f returns
// false. An entry without its events mask ends the walk (not an epoll's fdinfo).
template <typename F>
void ForEachEpollEntry(const char* text, F f) {
  using epoll_fdinfo_internal::Field;
  for (const char* p = text; (p = std::strstr(p, "tfd:")) != nullptr;) {
    p += 4;
    char* end = nullptr;
    const long fd = std::strtol(p, &end, 10);
    if (end == p) return;
    const char* line_end = std::strchr(end, '\n');
    EpollEntry e;
    e.fd = static_cast<int>(fd);
    uint64_t value = 0;
    if (!Field(end, line_end, "events:", 16, &value)) return;
    e.events = static_cast<uint32_t>(value);
    if (Field(end, line_end, "data:", 16, &value)) e.data = value;
    if (Field(end, line_end, "ino:", 16, &value)) e.inode = value;
    if (!f(e)) return;
    if (line_end == nullptr) return;
    p = line_end;
  }
}

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_EPOLL_FDINFO_H_
