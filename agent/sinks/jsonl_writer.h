// JsonlWriter: appends whole lines to a JSON Lines file, safely shared between processes.
//
// Each line goes out in one write(2) on an O_APPEND descriptor, so lines from concurrent
// writers never interleave; a line that goes out only in part (a full disk, RLIMIT_FSIZE) is
// taken back, so no torn line is left behind. The file is created 0600, never through a
// symbolic link, and never a FIFO or a device (regular_file.h). When a line would push the file
// past `max_bytes`, the file is renamed to PATH.1 and a new one started. If the file does not end
// with '\n' when opened (a writer died mid-line), the first line written starts with '\n' so
// the torn line is not glued to ours.
#ifndef HANGWATCH_AGENT_SINKS_JSONL_WRITER_H_
#define HANGWATCH_AGENT_SINKS_JSONL_WRITER_H_

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

  // In a forked child: closes the inherited descriptor (the parent keeps its own). System
  // calls only: callable from a pthread_atfork child handler.
  void ReleaseAfterFork();

  const std::string& path() const { return path_; }

 private:
  bool OpenFile(std::string* error);
  bool Rotate(std::string* error);
  bool WriteWhole(const std::string& buf, std::string* error);

  std::string path_;
  uint64_t max_bytes_;
  int fd_ = -1;
  int error_number_ = 0;
};

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_SINKS_JSONL_WRITER_H_
