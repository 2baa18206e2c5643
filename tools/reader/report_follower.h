// ReportFollower: the one follower of JSON Lines reports as they grow and rotate, for the
// commands that read a report while it is written: `hangwatch exporter` (every poll hands over
// the complete lines appended since the last one) and `hangwatch run` (the files that were its
// --report during the run, held while the command runs and read when it has ended).
//
// Files are named by paths or glob patterns (re-expanded on every poll: files that appear later
// are followed from their start) and followed by identity (device and inode), not by name, so:
// - appends are read from where the last read stopped; a line without its '\n' yet is left for
//   a later poll (a writer in the middle of it);
// - rotation (the agent's, or logrotate's: PATH renamed to PATH.1, a new PATH): the renamed file
//   stays open (a held file stays readable when a second rotation replaces or deletes it) and is
//   read to its end, for as long as a pattern still names it or, when none does any more, for a
//   grace period (the writer may still be appending to it); the new PATH is a new file, read
//   from its start. A file matched under two names is read once;
// - truncation (copytruncate: the file is shorter than where reading stopped) starts it over.
// A file that cannot be opened or read, is not a regular file or holds another format (gzip,
// zstd, an open-hang file) is said once per name (Event::kUnreadable) and tried again on later
// polls.
#ifndef HANGWATCH_TOOLS_READER_REPORT_FOLLOWER_H_
#define HANGWATCH_TOOLS_READER_REPORT_FOLLOWER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/reader/input_file.h"

namespace hangwatch::tools {

class ReportFollower {
 public:
  enum class Event {
    kUnreadable,  // a named file cannot be opened or read, or is not a report
    kTorn,        // a dropped file ended in a line without its '\n'
    kTooLong,     // a line over the line reader's limit, skipped
  };
  using LineHandler = std::function<void(std::string_view line)>;
  using EventHandler = std::function<void(Event event)>;

  struct Options {
    // How long a file that no pattern names any more is still read by Poll.
    std::chrono::milliseconds grace{2000};
    // Patterns holding '*', '?' or '[' are glob(3) patterns; false: every pattern is a path.
    bool globs = true;
    // The files the patterns name when the follower is made are followed from their current
    // end (only what is appended from now on), not from their start.
    bool from_end_at_start = false;
  };

  ReportFollower(std::vector<std::string> patterns, Options options);
  explicit ReportFollower(std::vector<std::string> patterns)
      : ReportFollower(std::move(patterns), Options{}) {}

  // Takes hold of the files the patterns name now that were not seen before, without reading
  // them (a poll too cheap to miss a rotation: one stat per name).
  void Discover(const EventHandler& on_event);

  // Discover, then read every file to its current end: complete lines (empty ones too) go to
  // on_line, in the order the files were found. A file no pattern named for the grace period is
  // read to its end (a last line without its '\n' is Event::kTorn) and dropped.
  void Poll(const LineHandler& on_line, const EventHandler& on_event);

  // Discover, then read every held file to its end, in the order found, and drop them all: the
  // last line of a file without its '\n' is a line too. False with *error ("PATH: why") on a
  // read error; the lines read before it were given.
  bool ReadToEnd(const LineHandler& on_line, const EventHandler& on_event, std::string* error);

  // Files held open now.
  size_t files() const { return order_.size(); }
  // Bytes read so far, over all files.
  uint64_t bytes() const { return bytes_; }

 private:
  using Key = std::pair<dev_t, ino_t>;
  struct Followed {
    Key key;
    InputFile file;
    uint64_t offset = 0;
    bool named = false;  // a pattern named it at the last poll
    std::chrono::steady_clock::time_point unnamed_since;
  };
  enum class Ending { kWait, kTorn, kLine };

  std::vector<std::string> Names() const;
  void Take(const std::string& name, bool from_end, const EventHandler& on_event);
  // Reads `f` from its offset (every line, empty ones too); `ending`: what an unterminated
  // last line is. Returns 0 or the read error's errno.
  int Read(Followed* f, Ending ending, const LineHandler& on_line, const EventHandler& on_event);
  void Unreadable(const std::string& name, const EventHandler& on_event);

  std::vector<std::string> patterns_;
  Options options_;
  std::vector<std::unique_ptr<Followed>> order_;  // in the order found
  std::set<Key> followed_;
  std::set<Key> refused_;             // files of another format, not opened again
  std::set<std::string> unreadable_;  // names said unreadable, until they read again
  uint64_t bytes_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_READER_REPORT_FOLLOWER_H_
