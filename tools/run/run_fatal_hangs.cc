#include "tools/run/run_fatal_hangs.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hang/files/jsonl_writer.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "tools/common/terminal_text.h"
#include "tools/reader/report_reader.h"
#include "tools/reader/report_symbolize.h"

namespace hangwatch::tools {

std::vector<HangRecord> TakeFatalHangs(const std::string& dir,
                                       const std::function<bool(int64_t)>& live) {
  std::vector<HangRecord> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "open-hang.", 10) != 0) continue;
    if (live(std::atoll(e->d_name + 10))) continue;
    HangRecord fatal;
    std::string error;
    const std::string path = dir + "/" + e->d_name;
    if (agent::ReadOpenHangFile(path, &fatal, &error) == agent::OpenHangReadStatus::kFound) {
      // Its frames were resolved against the dead process's modules but not named (that
      // needs the same build loaded here): name them offline, from the binaries on disk.
      Report one;
      one.hangs.push_back(std::move(fatal));
      std::vector<std::string> warnings;
      SymbolizeReport(ReportSymbolizeOptions{}, &one, &warnings);
      out.push_back(std::move(one.hangs[0]));
    }
    unlink(path.c_str());
  }
  closedir(d);
  return out;
}

bool EndedByExit(HangRecord* hang, int wait_status) {
  if (!WIFEXITED(wait_status)) return false;
  hang->fatal = false;
  hang->phase = HangPhase::kShutdown;
  return true;
}

int AppendToReport(const std::string& path, const HangRecord& hang) {
  agent::JsonlWriter writer(path, Config{}.json_max_bytes);
  std::string error;
  return writer.Append(ToJsonLine(hang), &error) ? 0 : writer.error_number();
}

void ReportFatalHangsOfEarlierRun(const std::string& dir, const std::string& report) {
  for (const HangRecord& fatal : TakeFatalHangs(dir, [](int64_t) { return false; })) {
    const int err = report.empty() ? 0 : AppendToReport(report, fatal);
    if (err != 0) {
      // Not lost in silence: the hang is printed below, and the report's failure said.
      std::fprintf(stderr, "hangwatch run: cannot add a fatal hang to %s: %s\n",
                   EscapeForTerminal(report).c_str(), std::strerror(err));
    }
    std::fprintf(stderr,
                 "hangwatch run: pid %lld (%s) of an earlier run died during a %llu ms hang; "
                 "%s\n",
                 static_cast<long long>(fatal.pid), EscapeForTerminal(fatal.process).c_str(),
                 static_cast<unsigned long long>(fatal.duration_ms),
                 report.empty() ? "that run had no --report, so it is not recorded"
                 : err != 0     ? "it is not recorded"
                                : EscapeForTerminal("added to " + report).c_str());
  }
}

}  // namespace hangwatch::tools
