// AppendFormat: printf onto the end of a fixed buffer, for the one-line summaries of a wait
// (FormatCall, FormatSummary). The text stays terminated and is cut at the buffer's end, never
// past it. The format is checked against its arguments at compile time, by GCC and clang.
#ifndef HANGWATCH_CAUSE_APPEND_FORMAT_H_
#define HANGWATCH_CAUSE_APPEND_FORMAT_H_

#include <cstdarg>
#include <cstddef>
#include <cstdio>

namespace hangwatch::cause {

// Appends to buf[0, n) at *at (the length so far) and moves *at to the new end, n - 1 at most.
// Does nothing once the buffer is full.
__attribute__((format(printf, 4, 5))) inline void AppendFormat(char* buf, size_t n, size_t* at,
                                                               const char* format, ...) {
  if (*at + 1 >= n) return;
  va_list args;
  va_start(args, format);
  const int w = std::vsnprintf(buf + *at, n - *at, format, args);
  va_end(args);
  if (w > 0) *at = *at + static_cast<size_t>(w) < n ? *at + static_cast<size_t>(w) : n - 1;
}

}  // namespace hangwatch::cause

#endif  // HANGWATCH_CAUSE_APPEND_FORMAT_H_
