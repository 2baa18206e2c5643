// The report `hangwatch run` reads back when its command has ended: everything the run appended
// to the --report file, wherever that went meanwhile. The agent rotates a full report (and
// logrotate does the same) by renaming PATH to PATH.1 and starting a new PATH; reading PATH
// alone at the end would miss the hangs written before the rotation, and `--fail-on-hang` could
// pass a run that hung. So the file is followed while the command runs: each file that was PATH
// during the run is held open (a held file stays readable when a second rotation replaces or
// deletes it), the first from the size it had when the run started, every later one from its
// start.
#ifndef HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_
#define HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_

#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/reader/input_file.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::tools {

class ReportFollower {
 public:
  // Opens `path` (created by `run`'s check of --report) and remembers its size. The file named
  // PATH.1 now holds older hangs: it is never read.
  explicit ReportFollower(std::string path);
  ~ReportFollower();
  ReportFollower(const ReportFollower&) = delete;
  ReportFollower& operator=(const ReportFollower&) = delete;

  // Starts a thread that calls Poll() every 20 ms (two stat calls) until ReadAppended(). Call
  // it after forking the command: a thread must not exist across fork.
  void Follow();

  // Takes hold of PATH.1 and PATH when they are files not seen before (a rotation happened).
  void Poll();

  // Stops following, polls once more, and gives `parser` the lines the run appended, through
  // the shared line source (tools/reader/line_reader.h), in the order the files were found: the
  // first file from where it stood at the start (from its beginning if it was truncated below
  // that: copytruncate), each later one whole. A file's torn last line is a line of its own.
  // False with *error ("PATH: why") on a read error; the lines read before it were given.
  bool ReadAppended(JsonLinesParser* parser, std::string* error);

 private:
  struct Held {
    InputFile file;  // its device and inode: file.stat()
    off_t from = 0;
  };
  bool Seen(dev_t dev, ino_t ino) const;
  void Take(const std::string& name, off_t from);

  void StopFollowing();

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread follower_;
  std::string path_;
  std::vector<Held> held_;
  dev_t old_dev_ = 0;  // PATH.1 when the run started
  ino_t old_ino_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_REPORT_FOLLOWER_H_
