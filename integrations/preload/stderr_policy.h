// Whether the preload shim may print on descriptor 2. The shim runs inside programs that never
// asked for it, and descriptor 2 is whatever the program made it: a daemon that closed 0-2 and
// then opened its own data file has that file on 2, and a line written there corrupts it. So
// the shim prints only on a terminal, a pipe, or a file it was told is a stderr: the one
// `hangwatch run` handed over (HANGWATCH_STDERR) or systemd's journal stream (JOURNAL_STREAM);
// both say "DEV:INO" of the file. Pure, so it is tested without a process of its own.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_STDERR_POLICY_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_STDERR_POLICY_H_

#include <sys/stat.h>

#include <string_view>

namespace hangwatch::preload {

// Descriptor 2 as fstat and isatty see it.
struct StderrFile {
  bool open = false;
  mode_t mode = 0;
  bool is_terminal = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

// "DEV:INO" (decimal, as systemd writes JOURNAL_STREAM) names this file.
bool IsNamedFile(const StderrFile& file, std::string_view dev_ino);

// A terminal, a pipe or FIFO, or the file named by one of `handed_over` ("DEV:INO" values; empty
// or null ones are ignored).
bool MayPrintOn(const StderrFile& file, const char* const* handed_over, int n);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_STDERR_POLICY_H_
