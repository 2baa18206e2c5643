#include "tools/reader/line_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hangwatch::tools {
namespace {
constexpr size_t kChunk = 1 << 20;  // one read; the buffer stays in the CPU's caches
}  // namespace

LineReader::LineReader(const InputFile& file, uint64_t offset, size_t max_line_bytes)
    : file_(file), max_(max_line_bytes), file_offset_(offset) {}

bool LineReader::Fill() {
  if (begin_ > 0) {
    // Only the current (partial) line moves, once: after this begin_ is 0 until it ends.
    if (end_ > begin_) std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  // end_ <= max_ here (a longer partial line was dropped), so max_ + kChunk is always enough.
  if (capacity_ < end_ + kChunk) {
    // realloc, not a vector: a large block grows in place (mremap), so a line near the limit
    // never needs the old and the new buffer at once, and nothing is zero-filled.
    const size_t grown = std::min(std::max(capacity_ * 2, end_ + kChunk), max_ + kChunk);
    char* more = static_cast<char*>(std::realloc(buf_.get(), grown));
    if (more == nullptr) {
      error_ = ENOMEM;
      return false;
    }
    (void)buf_.release();
    buf_.reset(more);
    capacity_ = grown;
  }
  const ssize_t got = file_.ReadAt(buf_.get() + end_, kChunk, file_offset_);
  if (got < 0) error_ = errno;
  if (got <= 0) return false;
  end_ += static_cast<size_t>(got);
  file_offset_ += static_cast<uint64_t>(got);
  return true;
}

bool LineReader::Next(Line* line) {
  *line = Line{};
  line->offset = offset();
  bool skipping = false;  // the line passed the limit: its bytes are dropped as they come
  for (;;) {
    const void* nl =
        scanned_ < end_ ? std::memchr(buf_.get() + scanned_, '\n', end_ - scanned_) : nullptr;
    if (nl != nullptr) {
      const size_t at = static_cast<size_t>(static_cast<const char*>(nl) - buf_.get());
      line->length += at - begin_;
      line->terminated = true;
      if (line->length > max_ || skipping) {
        line->too_long = true;
      } else {
        line->text = std::string_view(buf_.get() + begin_, at - begin_);
      }
      begin_ = scanned_ = at + 1;
      return true;
    }
    scanned_ = end_;
    if (end_ - begin_ > max_) {
      // Too long to keep: count what is here, drop it, and go on scanning for the line's end.
      skipping = true;
      line->length += end_ - begin_;
      begin_ = scanned_ = end_ = 0;
    }
    if (!Fill()) {
      if (error_ != 0) return false;
      if (end_ == begin_ && !skipping) return false;  // the end, between lines
      line->length += end_ - begin_;
      if (line->length > max_ || skipping) {
        line->too_long = true;
      } else {
        line->text = std::string_view(buf_.get() + begin_, end_ - begin_);
      }
      begin_ = scanned_ = end_;
      return true;
    }
  }
}

}  // namespace hangwatch::tools
