// Where `hangwatch export --state FILE` left off in each report file, so that a job run every few
// minutes sends each hang once.
//
// A file is known by its identity, not its name: device and inode, plus a hash of its first
// bytes (an inode number is reused once a file is deleted, and the agent's rotation deletes the
// oldest PATH.1). So a report rotated to PATH.1 keeps its offset under its new name, and a new
// file at the old path starts from 0. A file now shorter than the offset reached was truncated:
// it starts from 0 too.
//
// The state file is JSON ({"version":1,"files":[{"path","dev","inode","size","offset",
// "head_len","head_hash"},...]}; a path that is not UTF-8 has U+FFFD in "path" and its exact
// bytes in "path_hex"), replaced atomically (write, fsync, rename) after each batch the
// endpoint accepted. An entry whose file is gone is dropped at the next save.
#ifndef HANGWATCH_TOOLS_OTLP_STATE_H_
#define HANGWATCH_TOOLS_OTLP_STATE_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hangwatch::tools {

struct ExportFileState {
  std::string path;  // where it was last seen (informative)
  uint64_t dev = 0;
  uint64_t inode = 0;
  uint64_t size = 0;       // its size when the offset was recorded
  uint64_t offset = 0;     // every line before it was sent (or was not a hang)
  uint64_t head_len = 0;   // how many leading bytes head_hash covers (min(offset, 4096))
  uint64_t head_hash = 0;  // FNV-1a of those bytes
};

class ExportState {
 public:
  // Reads `path`; a missing file is an empty state. Fails on a file that is not a state file.
  absl::Status Load(const std::string& path);
  // Writes the state to the path it was loaded from.
  absl::Status Save();

  // The offset to resume `path` (open as `fd`, with `st`) from: the recorded offset when the file
  // is the one recorded and is not shorter than it, else 0.
  uint64_t ResumeOffset(const std::string& path, int fd, const struct stat& st);
  // Records that everything of the file before `offset` is done.
  void Record(const std::string& path, int fd, const struct stat& st, uint64_t offset);

  const std::vector<ExportFileState>& files() const { return files_; }

 private:
  ExportFileState* Find(const struct stat& st);
  std::string path_;
  std::vector<ExportFileState> files_;
};

// FNV-1a over the first `len` bytes of `fd` (pread; fewer when the file is shorter).
uint64_t HashFileHead(int fd, uint64_t len);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_OTLP_STATE_H_
