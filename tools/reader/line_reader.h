// LineReader: the lines of an InputFile from an offset, in one pass. Every byte is searched for
// '\n' once (a partial line is never searched again when more of it arrives) and moved at most
// once, so reading is linear in the file's size whatever its line lengths; memory is bounded by
// the longest line kept: a line longer than the limit (kMaxLineBytes unless told) is not kept
// but skipped, and reported as such, so one 300 MB line without a newline costs a scan, not
// 300 MB of memory.
#ifndef HANGWATCH_TOOLS_LINE_READER_H_
#define HANGWATCH_TOOLS_LINE_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "tools/reader/input_file.h"

namespace hangwatch::tools {

// The longest line the readers keep (docs/report-format.md): a hang record is far smaller
// (64 stacks of 64 frames are about 1 MB) even with the agent's limits raised.
inline constexpr size_t kMaxLineBytes = 64u << 20;

struct Line {
  std::string_view text;    // without its '\n'; empty when too_long
  uint64_t offset = 0;      // where it starts in the file
  uint64_t length = 0;      // its length in bytes (without the '\n'), also when too long
  bool terminated = false;  // ended by '\n' (not: the file's last bytes, maybe still written)
  bool too_long = false;    // longer than the limit: skipped, `text` is empty
};

class LineReader {
 public:
  LineReader(const InputFile& file, uint64_t offset, size_t max_line_bytes = kMaxLineBytes);

  // The next line. False at the end of the file, or on a read error (error() then is set).
  // The line's text stays valid until the next call.
  bool Next(Line* line);
  // errno of a failed read, 0 if none.
  int error() const { return error_; }
  // The offset after the last line returned (and its '\n').
  uint64_t offset() const { return file_offset_ - (end_ - begin_); }

 private:
  bool Fill();  // reads more after end_; false at the end of the file or on error

  const InputFile& file_;
  size_t max_;
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> buf_;
  size_t capacity_ = 0;
  size_t begin_ = 0;      // the current line's first byte in buf_
  size_t scanned_ = 0;    // buf_[begin_, scanned_) holds no '\n'
  size_t end_ = 0;        // bytes of buf_ read from the file
  uint64_t file_offset_;  // the file offset of buf_[end_]
  int error_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_LINE_READER_H_
