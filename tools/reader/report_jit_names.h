// Names of JIT-compiled code read after the fact: frames of a report that fall in no module
// (code a runtime compiled into anonymous memory) are named from the perf map the process left
// in /tmp (/tmp/perf-PID.map), when the agent could not name them as it wrote the record. That is
// the case for a runtime that writes its map only when it exits (the JVM with
// -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit): `hangwatch run` reads it once the
// command has ended, `hangwatch report` whenever the map is still there.
//
// A map is believed only when it can be the recorded process's: a hang recorded on this machine
// (its `host`), the map a regular file owned by this user (symbols::PerfMap's checks), and last
// modified at or after the hang started, hence after its process started: an older map belongs
// to an earlier process that had the same pid.
#ifndef HANGWATCH_TOOLS_READER_REPORT_JIT_NAMES_H_
#define HANGWATCH_TOOLS_READER_REPORT_JIT_NAMES_H_

#include <string>

#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

// Names the unnamed frames outside every module of each hang (its stacks and its cause's
// threads) from its process's perf map under `dir` (perf-PID.map), then recomputes the culprit
// of each hang that got a name. Returns how many frames were named.
size_t NameJitFrames(Report* report, const std::string& dir = "/tmp");

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_READER_REPORT_JIT_NAMES_H_
