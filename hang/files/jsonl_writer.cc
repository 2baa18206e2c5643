#include "hang/files/jsonl_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hang/files/kept_files.h"
#include "hang/files/regular_file.h"

namespace hangwatch::agent {

JsonlWriter::JsonlWriter(std::string path, uint64_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes) {}

void JsonlWriter::ReleaseAfterFork() { Drop(); }

JsonlWriter::~JsonlWriter() { Drop(); }

bool JsonlWriter::Open(std::string* error) { return OpenFile(error); }

bool JsonlWriter::StillOurs() const {
  struct stat st {};
  return fd_ >= 0 && fstat(fd_, &st) == 0 && st.st_dev == fd_dev_ && st.st_ino == fd_ino_;
}

void JsonlWriter::Drop() {
  // A number that names another file now is the program's (it closed ours and opened its own):
  // forgotten, never closed.
  if (StillOurs()) close(fd_);
  fd_ = -1;
}

bool JsonlWriter::OpenFile(std::string* error) {
  Drop();
  through_kept_ = false;
  // Read access too, for the torn-line check; a file we may only append to is still used.
  fd_ = OpenRegularFile(path_, O_RDWR | O_APPEND | O_CREAT, 0600, error);
  if (fd_ < 0 && errno == EACCES) {
    fd_ = OpenRegularFile(path_, O_WRONLY | O_APPEND | O_CREAT, 0600, error);
  }
  if (fd_ < 0 && (errno == EACCES || errno == EPERM)) {
    // The process changed user since the file was opened for it (kept_files.h): the name is out
    // of its reach, the descriptor kept before the change is not.
    const int saved_errno = errno;
    fd_ = DupKeptFile(path_.c_str());
    through_kept_ = fd_ >= 0;
    if (fd_ < 0) errno = saved_errno;
  }
  if (fd_ < 0) {
    error_number_ = errno;
    *error = "cannot open " + path_ + ": " + *error;
    return false;
  }
  struct stat st {};
  fstat(fd_, &st);
  fd_dev_ = st.st_dev;
  fd_ino_ = st.st_ino;
  return true;
}

bool JsonlWriter::Rotate(std::string* error) {
  const std::string old = path_ + ".1";
  if (through_kept_) {
    // The name is out of reach (the process changed user): the file cannot be renamed, and a
    // new one could not be created. It grows past max_bytes instead; said once.
    if (!rotation_skipped_) {
      rotation_skipped_ = true;
      notice_ = path_ + " is past " + std::to_string(max_bytes_) +
                " bytes but is not rotated: this process changed user and writes through a "
                "descriptor opened before";
    }
    return true;
  }
  if (rename(path_.c_str(), old.c_str()) != 0 && errno != ENOENT) {
    error_number_ = errno;
    *error = "cannot rotate " + path_ + ": " + std::strerror(errno);
    return false;
  }
  return OpenFile(error);
}

bool JsonlWriter::Append(const std::string& line, std::string* error) {
  error_number_ = 0;
  if ((fd_ >= 0 && !StillOurs()) || fd_ < 0) {
    if (!OpenFile(error)) {
      return false;
    }
  }
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    error_number_ = errno;
    *error = "cannot stat " + path_ + ": " + std::strerror(errno);
    return false;
  }
  // Another process may have rotated the file under us: follow the name (never a link). A name
  // out of reach (the process changed user) is not followed: the kept descriptor is written.
  struct stat by_name {};
  const bool name_ok = lstat(path_.c_str(), &by_name) == 0;
  const bool unreachable = !name_ok && (errno == EACCES || errno == EPERM) && through_kept_;
  if (!unreachable && (!name_ok || by_name.st_ino != st.st_ino || by_name.st_dev != st.st_dev)) {
    if (!OpenFile(error)) {
      return false;
    }
    if (fstat(fd_, &st) != 0) {
      error_number_ = errno;
      *error = "cannot stat " + path_ + ": " + std::strerror(errno);
      return false;
    }
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > 0 && size + line.size() + 2 > max_bytes_) {
    const bool kept = through_kept_;
    if (!Rotate(error)) {
      return false;
    }
    if (!kept) size = 0;  // a kept descriptor's file is not rotated: it keeps its size
  }
  // A torn last line (writer killed mid-write, file cut): start on a fresh line. (A descriptor
  // opened write-only cannot tell: then the line goes out as it is.)
  char last = '\n';
  const bool need_newline =
      size > 0 && pread(fd_, &last, 1, static_cast<off_t>(size - 1)) == 1 && last != '\n';
  std::string buf;
  buf.reserve(line.size() + 2);
  if (need_newline) {
    buf.push_back('\n');
  }
  buf.append(line);
  buf.push_back('\n');
  return WriteWhole(buf, error);
}

bool JsonlWriter::WriteWhole(const std::string& buf, std::string* error) {
  // One write: O_APPEND makes it atomic with respect to other appenders for regular files.
  const ssize_t n = write(fd_, buf.data(), buf.size());
  if (n == static_cast<ssize_t>(buf.size())) {
    return true;
  }
  int err = n < 0 ? errno : EIO;
  if (n > 0) {
    // Part of the line went out (the disk or the file size limit ran out in the middle). O_APPEND
    // put it at the end, where this descriptor's offset now is. The rest would fail the same
    // way: trying it tells why (and completes the line if the space came back).
    const off_t part_end = lseek(fd_, 0, SEEK_CUR);
    const size_t left = buf.size() - static_cast<size_t>(n);
    const ssize_t rest = write(fd_, buf.data() + n, left);
    if (rest == static_cast<ssize_t>(left) && lseek(fd_, 0, SEEK_CUR) == part_end + rest) {
      return true;  // the two parts are adjacent: the line is whole
    }
    err = rest < 0 ? errno : EIO;
    // The part is taken back, so that no torn line is left, when the file still ends with it
    // (a line another writer appended after it is never cut).
    struct stat st {};
    if (rest <= 0 && part_end >= n && fstat(fd_, &st) == 0 && st.st_size == part_end &&
        ftruncate(fd_, part_end - n) != 0) {
      err = errno;
    }
  }
  error_number_ = err;
  *error = "cannot write to " + path_ + ": " + std::strerror(err);
  return false;
}

}  // namespace hangwatch::agent
