// The name of a process's open-hang file in HANGWATCH_OPEN_HANG_DIR, formatted the same way by
// both libraries of the shim: the loader, which creates and keeps it before the program changes
// user (privilege_drop.cc), and the agent library, which hands it to the agent when it arms
// (preload_agent.cc). Plain code, libc only (hangwatch_preload_plain).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_OPEN_HANG_PATH_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_OPEN_HANG_PATH_H_

#include <stddef.h>

namespace hangwatch::preload {

// `dir`/open-hang.`pid` into out (cap bytes, NUL-terminated): this process's open-hang file.
// False when it does not fit. Allocation-free.
bool FormatOpenHangPath(const char* dir, long pid, char* out, size_t cap);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_OPEN_HANG_PATH_H_
