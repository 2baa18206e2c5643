// InputFile: the one way the command line opens a file it reads (a report for `report`, `top`,
// `gate` and `export`): one rule for what it accepts, so that no command blocks, hangs or dies
// on what another refuses.
//
// - Opened with O_NONBLOCK: opening a FIFO nobody writes to returns at once instead of waiting
//   for a writer; then only regular files are accepted (a FIFO, a device, a socket or a
//   directory is refused with "PATH: not a regular file", "PATH: a directory").
// - Read with pread, never mapped: a file truncated while it is read (logrotate's
//   `copytruncate`) just ends early, where a mapping would kill the reader with SIGBUS.
// - What a file holds is told by its first bytes (Sniff): JSON Lines, an open-hang file, or a
//   gzip or zstd compressed file, which no command reads; CompressedFileError is the one
//   wording every command uses for those.
#ifndef HANGWATCH_TOOLS_INPUT_FILE_H_
#define HANGWATCH_TOOLS_INPUT_FILE_H_

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hangwatch::tools {

// What a report file holds, by its first bytes.
enum class InputFormat {
  kJsonLines,  // anything else: read as JSON Lines, line by line
  kOpenHang,   // hang/open_hang/open_hang_file.h's magic
  kGzip,       // rotated logs are often compressed by logrotate
  kZstd,
};

class InputFile {
 public:
  InputFile() = default;
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Opens `path` as above. False with *error, one line starting with the path ("PATH: why").
  bool Open(const std::string& path, std::string* error);

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // The file's status at opening (size, device, inode).
  const struct stat& stat() const { return stat_; }
  uint64_t size() const { return static_cast<uint64_t>(stat_.st_size); }

  // pread of up to n bytes at `offset`, EINTR retried: the bytes read, 0 at the end, -1 (errno)
  // on error.
  ssize_t ReadAt(void* buf, size_t n, uint64_t offset) const;
  // The first bytes of the file (up to n; fewer when it is shorter), for its magic number.
  std::string Head(size_t n) const;
  bool IsGzip() const { return Sniff() == InputFormat::kGzip; }
  InputFormat Sniff() const;
  // Everything from `offset` to the file's end as it is now. False with *error on a read error.
  bool ReadAll(std::string* out, std::string* error, uint64_t offset = 0) const;

 private:
  int fd_ = -1;
  std::string path_;
  struct stat stat_ = {};
};

// Why a compressed file is not read, without its path: "gzip-compressed (decompress it first:
// zcat FILE > FILE.jsonl)", the same for zstd. "" for the formats that are read.
std::string_view CompressedFileError(InputFormat format);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_INPUT_FILE_H_
