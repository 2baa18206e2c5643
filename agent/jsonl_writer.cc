#include "agent/jsonl_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hangwatch::agent {

JsonlWriter::JsonlWriter(std::string path, uint64_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes) {}

void JsonlWriter::ReleaseAfterFork() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

JsonlWriter::~JsonlWriter() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

bool JsonlWriter::Open(std::string* error) { return OpenFile(error); }

bool JsonlWriter::OpenFile(std::string* error) {
  if (fd_ >= 0) {
    close(fd_);
  }
  fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    *error = "cannot open " + path_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool JsonlWriter::Rotate(std::string* error) {
  const std::string old = path_ + ".1";
  if (rename(path_.c_str(), old.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot rotate " + path_ + ": " + std::strerror(errno);
    return false;
  }
  return OpenFile(error);
}

bool JsonlWriter::Append(const std::string& line, std::string* error) {
  if (fd_ < 0 && !OpenFile(error)) {
    return false;
  }
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    *error = "cannot stat " + path_ + ": " + std::strerror(errno);
    return false;
  }
  // Another process may have rotated the file under us: follow the name.
  struct stat by_name {};
  if (stat(path_.c_str(), &by_name) != 0 || by_name.st_ino != st.st_ino ||
      by_name.st_dev != st.st_dev) {
    if (!OpenFile(error)) {
      return false;
    }
    if (fstat(fd_, &st) != 0) {
      *error = "cannot stat " + path_ + ": " + std::strerror(errno);
      return false;
    }
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > 0 && size + line.size() + 2 > max_bytes_) {
    if (!Rotate(error)) {
      return false;
    }
    size = 0;
  }
  // A torn last line (writer killed mid-write, file cut): start on a fresh line.
  bool need_newline = false;
  if (size > 0) {
    const int rfd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
      char last = '\n';
      if (pread(rfd, &last, 1, static_cast<off_t>(size - 1)) == 1 && last != '\n') {
        need_newline = true;
      }
      close(rfd);
    }
  }
  std::string buf;
  buf.reserve(line.size() + 2);
  if (need_newline) {
    buf.push_back('\n');
  }
  buf.append(line);
  buf.push_back('\n');
  // One write: O_APPEND makes it atomic with respect to other appenders for regular files.
  const ssize_t n = write(fd_, buf.data(), buf.size());
  if (n != static_cast<ssize_t>(buf.size())) {
    *error = "short write to " + path_ + (n < 0 ? std::string(": ") + std::strerror(errno) : "");
    return false;
  }
  return true;
}

}  // namespace hangwatch::agent
