// Text for a terminal. Everything the human outputs print may come from someone else: a report
// written by another user's process, a thread name, a server's answer. A control sequence in it
// (ESC ] 0 ; ... BEL retitles the window; others move the cursor, rewrite lines, or on some
// terminals answer with input) must reach the terminal as visible text, never as a command.
#ifndef HANGWATCH_TOOLS_TERMINAL_TEXT_H_
#define HANGWATCH_TOOLS_TERMINAL_TEXT_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace hangwatch::tools {

// `text` with every byte a terminal could take as a command written as "\xNN": the C0 controls
// except newline and tab (ESC, BEL, carriage return, backspace...), DEL, the C1 controls
// U+0080..U+009F (encoded in UTF-8: C2 80..C2 9F; CSI is U+009B), and every byte that is not
// part of valid UTF-8 (a raw 0x9B is CSI to a terminal in an 8-bit mode). Valid UTF-8 text,
// newlines and tabs are unchanged, so ordinary output stays byte-identical. Backslashes are not
// doubled: the result is for reading, not for parsing back.
inline std::string EscapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char c) {
    char buf[5];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
        escape(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // The length of a well-formed UTF-8 sequence starting here (RFC 3629: no overlong forms,
    // no surrogates, nothing above U+10FFFF); 0 when it is not one.
    size_t len = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
    }
    if (len != 0 && i + len <= n) {
      for (size_t k = 1; k < len; ++k) {
        if ((s[i + k] & 0xc0) != 0x80) len = 0;
      }
    } else {
      len = 0;
    }
    if (len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f))) len = 0;
    if (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))) len = 0;
    if (len == 0) {
      escape(c);
      ++i;
    } else if (len == 2 && c == 0xc2 && s[i + 1] <= 0x9f) {
      // A C1 control character.
      escape(c);
      escape(s[i + 1]);
      i += 2;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

// True when `text` is printable ASCII only (0x20..0x7e: no newline or tab either), which
// EscapeForTerminal returns unchanged: a fast test for output written line by line (`snapshot`'s
// frames: byte by byte, checking its 600 lines added 60 us to an 86 us output phase). False
// only means that EscapeForTerminal must decide. Eight bytes at a time: a byte below 0x20
// borrows into its high bit when 0x20 is subtracted, one at 0x7f or above has it set after 1
// is added (a carry or borrow across bytes starts only at a byte that is flagged anyway).
inline bool IsTerminalSafe(std::string_view text) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  uint64_t flagged = 0;
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, text.data() + i, 8);
    flagged |= (((x - kOnes * 0x20) & ~x) | (x + kOnes) | x) & kHigh;
  }
  for (; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    flagged |= static_cast<uint64_t>(c < 0x20 || c >= 0x7f);
  }
  return flagged == 0;
}

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_TERMINAL_TEXT_H_
