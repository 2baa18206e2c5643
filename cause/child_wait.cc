#include "cause/child_wait.h"

#include <cstdlib>
#include <cstring>

#include "unwind/proc_files.h"

namespace hangwatch::cause {

ChildInfo ResolveChildWait(pid_t waiter, const DecodedWait& w) {
  ChildInfo c;
  char path[64];
  char buf[512];
  pid_t pid = w.child > 0 ? static_cast<pid_t>(w.child) : 0;
  if (pid == 0) {
    c.any = true;
    unwind::TaskPath(0, waiter, "children", path, sizeof(path));
    const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
    if (n > 0) pid = static_cast<pid_t>(std::strtol(buf, nullptr, 10));
  }
  if (pid <= 0) return c;
  unwind::ProcPath(pid, "stat", path, sizeof(path));
  const ssize_t n = unwind::ReadProcFile(path, buf, sizeof(buf));
  unwind::TaskStat st;
  c.pid = pid;
  if (n > 0 && unwind::ParseTaskStat(buf, static_cast<size_t>(n), &st)) {
    const size_t len = st.comm_size < sizeof(c.name) - 1 ? st.comm_size : sizeof(c.name) - 1;
    std::memcpy(c.name, st.comm, len);
    c.name[len] = '\0';
    c.state = st.state;
  }
  return c;
}

}  // namespace hangwatch::cause
