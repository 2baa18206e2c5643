// JsonlWriter: appends whole lines to a JSON Lines file, safely shared between processes.
//
// Each line goes out in one write(2) on an O_APPEND descriptor, so lines from concurrent
// writers never interleave; a line that goes out only in part (a full disk, RLIMIT_FSIZE) is
// taken back, so no torn line is left behind. The file is created 0600, never through a
// symbolic link, and never a FIFO or a device (regular_file.h). When a line would push the file
// past `max_bytes`, the file is renamed to PATH.1 and a new one started. If the file does not end
// with '\n' when opened (a writer died mid-line), the first line written starts with '\n' so
// the torn line is not glued to ours.
//
// A process that changed user (a server's worker dropping root) may no longer open the file by
// name: the writer then appends through a descriptor opened before the change (kept_files.h). Such
// a file is not rotated (renaming it, or creating the next one, needs the name): it grows past
// `max_bytes`, which TakeNotice() says once. A descriptor whose number the program closed and
// reused for a file of its own is never written nor closed: the writer opens the file again.
#ifndef HANGWATCH_HANG_FILES_JSONL_WRITER_H_
#define HANGWATCH_HANG_FILES_JSONL_WRITER_H_

#include <sys/types.h>
#include <cstdint>

#include <string>

namespace hangwatch::agent {

class JsonlWriter {
 public:
  JsonlWriter(std::string path, uint64_t max_bytes);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  // Opens (creating) the file. Returns false and sets *error when it cannot be opened.
  bool Open(std::string* error);
  // Appends `line` + '\n'. Returns false and sets *error on failure.
  bool Append(const std::string& line, std::string* error);
  // The errno of the last failed Open() or Append() (0 after a success).
  int error_number() const { return error_number_; }
  // One line the writer has to say once without failing a write (a rotation it skipped); ""
  // when none, or when already taken.
  std::string TakeNotice() { return std::move(notice_); }

  // In a forked child: closes the inherited descriptor (the parent keeps its own). System
  // calls only: callable from a pthread_atfork child handler.
  void ReleaseAfterFork();

  const std::string& path() const { return path_; }

 private:
  bool OpenFile(std::string* error);
  bool Rotate(std::string* error);
  bool WriteWhole(const std::string& buf, std::string* error);
  // fd_ still refers to the file it was opened on (the program did not reuse the number).
  bool StillOurs() const;
  // Closes fd_ when it is still ours; forgets it either way.
  void Drop();

  std::string path_;
  uint64_t max_bytes_;
  int fd_ = -1;
  dev_t fd_dev_ = 0;
  ino_t fd_ino_ = 0;
  bool through_kept_ = false;  // fd_ is a copy of a kept descriptor: the name is out of reach
  bool rotation_skipped_ = false;
  std::string notice_;
  int error_number_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_FILES_JSONL_WRITER_H_
