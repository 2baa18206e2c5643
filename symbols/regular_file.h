// Opening a file that someone else may have named or planted: a module path in a report, the JIT
// perf map in /tmp, a .gnu_debuglink target, a file in the symbol cache. Such a path can name a
// FIFO (whose open(2) waits for a writer forever), a device (/dev/zero reads without end, some
// devices act on open), a socket or a directory; or a regular file far larger than anything the
// caller would read. RegularFile::Open refuses all of these, and never blocks doing so:
//   - stat (lstat with `no_follow`) first, and nothing but a regular file is opened at all;
//   - then open(O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC [| O_NOFOLLOW]) and fstat: the
//     descriptor must be that same regular file (device and inode), so a FIFO swapped in between
//     the two is opened without waiting and refused without a byte read;
//   - optional rules: owned by this process's effective user (or writable by no one else),
//     at most `max_bytes` long.
// The one way this code base opens such files for reading (grep for it before writing another;
// the agent's own output files are created through hang/files/regular_file.h).
// Not for the capture path (it allocates on error).
#ifndef HANGWATCH_SYMBOLS_REGULAR_FILE_H_
#define HANGWATCH_SYMBOLS_REGULAR_FILE_H_

#include <sys/stat.h>

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"

namespace hangwatch::symbols {

struct RegularFileRules {
  bool no_follow = false;      // a symbolic link as the last component is refused
  bool own_user_only = false;  // a file owned by another user is refused
  // A file that someone else could have written is refused: owned by another user than this
  // one or root, or writable by its group or by others (a cache's files).
  bool trusted_only = false;
  uint64_t max_bytes = std::numeric_limits<uint64_t>::max();  // a longer file is refused
};

class RegularFile {
 public:
  // `path` opened for reading under `rules`, or why not: NotFound (it does not exist or cannot
  // be opened), FailedPrecondition (not a regular file, or replaced while being opened),
  // PermissionDenied (another user's, with `own_user_only`; writable by others, with
  // `trusted_only`), ResourceExhausted (longer than `max_bytes`). Every message starts with the
  // path.
  static absl::StatusOr<RegularFile> Open(const std::string& path,
                                          const RegularFileRules& rules = {});

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  // fstat of the open descriptor.
  const struct stat& stat() const { return stat_; }
  uint64_t size() const { return static_cast<uint64_t>(stat_.st_size); }
  // The descriptor, now the caller's to close.
  int Release();

 private:
  RegularFile(int fd, const struct stat& st) : fd_(fd), stat_(st) {}
  int fd_ = -1;
  struct stat stat_ = {};
};

// Whether only this process's user (or root) can write the file or directory of `st`: owned by
// either, and not writable by its group or by others.
bool WritableOnlyByUs(const struct stat& st);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_REGULAR_FILE_H_
