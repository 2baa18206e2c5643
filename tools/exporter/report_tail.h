// ReportTail: follows JSON Lines reports as they grow, for `hangwatch exporter`. Each Poll()
// hands over the complete lines appended since the last one.
//
// Files are named by paths or glob patterns (re-expanded on every poll: files that appear later
// are followed from their start) and followed by identity (device and inode), not by name, so:
// - appends are read from where the last poll stopped; a line without its '\n' yet is left for
//   a later poll (a writer in the middle of it);
// - rotation (the agent's, or logrotate's: PATH renamed to PATH.1, a new PATH): the renamed file
//   stays open and is read to its end, for as long as a pattern still names it or, when none
//   does any more, for a grace period (the writer may still be appending to it); the new PATH is
//   a new file, read from its start. A file matched under two names is read once;
// - truncation (copytruncate: the file is shorter than where reading stopped) starts it over.
// A file that cannot be opened or read, is not a regular file or holds another format (gzip,
// zstd, an open-hang file) is reported once per name through on_skip("unreadable") and tried
// again on later polls; a partial line left when a file is closed is reported as "torn".
#ifndef HANGWATCH_TOOLS_EXPORTER_REPORT_TAIL_H_
#define HANGWATCH_TOOLS_EXPORTER_REPORT_TAIL_H_

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

class ReportTail {
 public:
  using LineHandler = std::function<void(std::string_view line)>;
  // `reason`: one of hang_metrics.h's kSkip* names.
  using SkipHandler = std::function<void(std::string_view reason)>;

  // `patterns`: paths, or glob(3) patterns when they hold '*', '?' or '['. `grace`: how long a
  // file that no pattern names any more is still read.
  explicit ReportTail(std::vector<std::string> patterns,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  // Reads every file to its current end: complete lines go to on_line, in file order.
  void Poll(const LineHandler& on_line, const SkipHandler& on_skip);

  // Files held open now.
  size_t files() const { return followed_.size(); }
  // Bytes read so far, over all files.
  uint64_t bytes() const { return bytes_; }

 private:
  using Key = std::pair<dev_t, ino_t>;
  struct Followed {
    InputFile file;
    uint64_t offset = 0;
    bool named = false;  // a pattern named it at the last poll
    std::chrono::steady_clock::time_point unnamed_since;
  };

  std::vector<std::string> Names() const;
  void Discover(const std::string& name, const SkipHandler& on_skip);
  // Reads `f` from its offset; `closing`: an unterminated last line is torn, not awaited.
  void Read(Followed* f, bool closing, const LineHandler& on_line, const SkipHandler& on_skip);
  void Unreadable(const std::string& name, const SkipHandler& on_skip);

  std::vector<std::string> patterns_;
  std::chrono::milliseconds grace_;
  std::map<Key, std::unique_ptr<Followed>> followed_;
  std::set<Key> refused_;             // files of another format, not opened again
  std::set<std::string> unreadable_;  // names reported unreadable, until they read again
  uint64_t bytes_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_EXPORTER_REPORT_TAIL_H_
