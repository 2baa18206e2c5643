#include "tools/reader/input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "hang/open_hang/open_hang_file.h"

namespace hangwatch::tools {

InputFile::~InputFile() {
  if (fd_ >= 0) close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), stat_(other.stat_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    stat_ = other.stat_;
  }
  return *this;
}

bool InputFile::Open(const std::string& path, std::string* error) {
  *this = InputFile();
  path_ = path;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0 || fstat(fd_, &stat_) != 0) {
    *error = path + ": " + std::strerror(errno);
    *this = InputFile();
    return false;
  }
  if (!S_ISREG(stat_.st_mode)) {
    *error = path + (S_ISDIR(stat_.st_mode) ? ": a directory" : ": not a regular file");
    *this = InputFile();
    return false;
  }
  return true;
}

ssize_t InputFile::ReadAt(void* buf, size_t n, uint64_t offset) const {
  for (;;) {
    const ssize_t got = pread(fd_, buf, n, static_cast<off_t>(offset));
    if (got >= 0 || errno != EINTR) return got;
  }
}

std::string InputFile::Head(size_t n) const {
  std::string head(n, '\0');
  size_t have = 0;
  while (have < n) {
    const ssize_t got = ReadAt(head.data() + have, n - have, have);
    if (got <= 0) break;
    have += static_cast<size_t>(got);
  }
  head.resize(have);
  return head;
}

InputFormat InputFile::Sniff() const {
  const std::string head = Head(agent::kOpenHangFileMagic.size());
  const std::string_view h(head);
  if (h == agent::kOpenHangFileMagic) return InputFormat::kOpenHang;
  if (h.starts_with("\x1f\x8b")) return InputFormat::kGzip;
  if (h.starts_with("\x28\xb5\x2f\xfd")) return InputFormat::kZstd;
  return InputFormat::kJsonLines;
}

std::string_view CompressedFileError(InputFormat format) {
  switch (format) {
    case InputFormat::kGzip:
      return "gzip-compressed (decompress it first: zcat FILE > FILE.jsonl)";
    case InputFormat::kZstd:
      return "zstd-compressed (decompress it first: zstdcat FILE > FILE.jsonl)";
    case InputFormat::kJsonLines:
    case InputFormat::kOpenHang:
      break;
  }
  return "";
}

bool InputFile::ReadAll(std::string* out, std::string* error, uint64_t offset) const {
  out->clear();
  constexpr size_t kChunk = 1 << 20;
  for (;;) {
    const size_t have = out->size();
    out->resize(have + kChunk);
    const ssize_t got = ReadAt(out->data() + have, kChunk, offset + have);
    out->resize(have + (got > 0 ? static_cast<size_t>(got) : 0));
    if (got == 0) return true;
    if (got < 0) {
      *error = path_ + ": " + std::strerror(errno);
      return false;
    }
  }
}

}  // namespace hangwatch::tools
