// The report `hangwatch run` reads back when its command has ended: everything the run appended
// to the --report file, wherever that went meanwhile. The agent rotates a full report (and
// logrotate does the same) by renaming PATH to PATH.1 and starting a new PATH; reading PATH
// alone at the end would miss the hangs written before the rotation, and `--fail-on-hang` could
// pass a run that hung. So the file is followed while the command runs, by the one follower of
// growing and rotating reports (tools/reader/report_follower.h, which the exporter uses too):
// each file that was PATH or PATH.1 during the run is held open, those there at the start from
// the size they had then, every later one from its start. This adds the thread that polls it.
#ifndef HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_
#define HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "tools/reader/report_follower.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

class RunReportFollower {
 public:
  // Holds `path` (created by `run`'s check of --report) and PATH.1 from their current sizes.
  explicit RunReportFollower(const std::string& path);
  ~RunReportFollower();
  RunReportFollower(const RunReportFollower&) = delete;
  RunReportFollower& operator=(const RunReportFollower&) = delete;

  // Starts a thread that takes hold of new files every 20 ms (two stat calls) until
  // ReadAppended(). Call it after forking the command: a thread must not exist across fork.
  void Follow();

  // Takes hold of PATH.1 and PATH when they are files not seen before (a rotation happened).
  void Poll();

  // Stops following and gives `parser` the lines the run appended, in the order the files were
  // found: each from where it stood at the start (from its beginning if it was truncated below
  // that: copytruncate), each later one whole. A file's torn last line is a line of its own.
  // False with *error ("PATH: why") on a read error; the lines read before it were given.
  bool ReadAppended(JsonLinesParser* parser, std::string* error);

 private:
  void StopFollowing();

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread follower_;
  ReportFollower files_;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_
