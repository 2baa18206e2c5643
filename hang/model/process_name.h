// The name of this process as a report records it (`process_name`, docs/report-format.md):
// read from /proc when a hang is materialized and when the agent starts.
#ifndef HANGWATCH_HANG_MODEL_PROCESS_NAME_H_
#define HANGWATCH_HANG_MODEL_PROCESS_NAME_H_

#include <string>

namespace hangwatch::agent {

// This process's name as users name it: the file name of argv[0] (/proc/self/cmdline), cut at
// ": " and at the first space for programs that rewrite their title ("postgres: checkpointer"
// -> "postgres", "/usr/bin/redis-server 127.0.0.1:6379" -> "redis-server"), else
// /proc/self/comm; "" when neither is readable. Not /proc/self/exe: Debian's redis-server is a
// symlink to redis-check-rdb.
std::string ThisProcessName();

// The same rule for a process-title string (argv[0] as read from cmdline); exposed for tests.
std::string ProcessNameFromArgv0(const std::string& argv0);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_MODEL_PROCESS_NAME_H_
