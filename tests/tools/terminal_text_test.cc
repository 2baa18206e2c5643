// Control sequences from other people's data never reach the terminal raw: EscapeForTerminal on
// its own, then every human output of `report`, `gate` (text, GitHub annotations, Markdown),
// `top` and `run` fed a report whose process name, culprit, frames and host carry escape
// sequences (ESC ] 0 ; ... BEL retitles a terminal window; CSI 2 J clears the screen).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "report/report_record.h"
#include "tools/common/terminal_text.h"

namespace hangwatch::testing {
namespace {

using tools::EscapeForTerminal;
using tools::IsTerminalSafe;

const std::string kCli = HANGWATCH_CLI;

TEST(EscapeForTerminal, ControlCharactersBecomeVisibleTextAndUtf8StaysAsItIs) {
  EXPECT_EQ(EscapeForTerminal("plain text\twith a tab\n"), "plain text\twith a tab\n");
  EXPECT_EQ(EscapeForTerminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(EscapeForTerminal("a\rb\bc\x7f"), "a\\x0db\\x08c\\x7f");
  EXPECT_EQ(EscapeForTerminal(std::string("nul\0end", 7)), "nul\\x00end");
  // UTF-8: kept, except the C1 controls (U+009B is CSI).
  EXPECT_EQ(EscapeForTerminal("caf\xc3\xa9 \xe2\x86\x90 \xf0\x9f\x94\xa5"),
            "caf\xc3\xa9 \xe2\x86\x90 \xf0\x9f\x94\xa5");
  EXPECT_EQ(EscapeForTerminal("x\xc2\x9b"
                              "2J"),
            "x\\xc2\\x9b2J");
  EXPECT_EQ(EscapeForTerminal("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is not a control
  // Bytes that are not UTF-8 (a raw 0x9b is CSI on an 8-bit terminal; truncated, overlong and
  // surrogate forms).
  EXPECT_EQ(EscapeForTerminal("\x9b"
                              "2J"),
            "\\x9b2J");
  EXPECT_EQ(EscapeForTerminal("\xe2\x86"), "\\xe2\\x86");
  EXPECT_EQ(EscapeForTerminal("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeForTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeForTerminal("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  // Escaping twice changes nothing more: outputs escaped at several layers stay readable.
  const std::string once = EscapeForTerminal("\x1b[2J\xc2\x9b\xff");
  EXPECT_EQ(EscapeForTerminal(once), once);
  // The fast test: printable ASCII only, at every position of an 8-byte word and in the tail.
  const std::string printable = "  #12  0x00007f0000001234  Load(int)  /src/a.cc:12  (app+0x1234)";
  EXPECT_TRUE(IsTerminalSafe(printable));
  EXPECT_TRUE(IsTerminalSafe(""));
  EXPECT_TRUE(IsTerminalSafe(" ~"));
  for (const char c :
       {'\x1b', '\x07', '\n', '\t', '\x1f', '\x7f', '\x80', '\x9b', '\xc2', '\xff'}) {
    for (size_t at = 0; at < printable.size(); ++at) {
      std::string s = printable;
      s[at] = c;
      EXPECT_FALSE(IsTerminalSafe(s)) << static_cast<int>(c) << " at " << at;
    }
  }
}

constexpr char kTitle[] = "\x1b]0;pwned\x07";
constexpr char kClear[] =
    "\x1b[2J\xc2\x9b"
    "2J";

// A hang whose every printed string carries an escape sequence.
std::string HostileReport() {
  HangRecord h;
  h.pid = 7;
  h.tid = 7;
  h.process = absl::StrCat("/srv/", kTitle, "app");
  h.process_name = absl::StrCat(kTitle, "app");
  h.host = absl::StrCat("host", kClear);
  h.labels = {{"team", kClear}};
  h.duration_ms = 900;
  h.start_unix_ms = 1763700000000;
  h.signature = "1111111111111111";
  h.fingerprint = "0123456789abcdef";
  h.samples = 3;
  Stack s;
  s.count = 3;
  for (int i = 0; i < 2; ++i) {
    Frame f;
    f.module = absl::StrCat("/srv/", kTitle, "app");
    f.offset = 0x1000 + 0x80 * static_cast<uint64_t>(i);
    f.addr = 0x560000000000 + f.offset;
    f.symbol = absl::StrCat("Load", kClear, i);
    f.file = absl::StrCat("/src/", kTitle, "load.cc");
    f.line = 40 + i;
    s.frames.push_back(f);
  }
  h.stacks.push_back(s);
  h.dominant_stack = 0;
  h.culprit.symbol = s.frames[0].symbol;
  h.culprit.module = s.frames[0].module;
  h.culprit.offset = s.frames[0].offset;
  h.culprit.file = s.frames[0].file;
  h.culprit.line = 40;
  h.culprit.frame = 0;
  h.modules.push_back({s.frames[0].module, 0x560000000000, ""});
  return report::Encode(h) + "\n";
}

bool HasControl(const std::string& text) {
  return text.find('\x1b') != std::string::npos || text.find('\x07') != std::string::npos ||
         text.find("\xc2\x9b") != std::string::npos;
}

TEST(TerminalOutput, HostileReportPrintsNoControlSequences) {
  TempDir dir;
  const std::string report = dir / "hostile.jsonl";
  WriteFile(report, HostileReport());
  const std::string md = dir / "summary.md";
  const std::vector<std::vector<std::string>> commands = {
      {kCli, "report", "--no-symbolize", report},
      {kCli, "gate", "--no-symbolize", report},
      {kCli, "gate", "--no-symbolize", "--github", "--markdown", md, report},
      {kCli, "top", "--no-symbolize", report},
      {kCli, "top", "--no-symbolize", "--by", "culprit", report},
  };
  for (const auto& args : commands) {
    const auto r = RunCommand(args, {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
    EXPECT_NE(r.exit_code, 2) << args[1] << ": " << r.err;
    EXPECT_FALSE(HasControl(r.out)) << args[1] << ":\n" << r.out;
    EXPECT_FALSE(HasControl(r.err)) << args[1] << ":\n" << r.err;
    // The names are still there, visibly escaped.
    EXPECT_TRUE(Has(r.out, "\\x1b]0;pwned\\x07")) << args[1] << ":\n" << r.out;
  }
  const std::string markdown = ReadFile(md);
  EXPECT_FALSE(HasControl(markdown)) << markdown;
  // A file name from the command line in an error message.
  const auto missing = RunCommand({kCli, "report", dir / kTitle});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_FALSE(HasControl(missing.err)) << missing.err;
}

}  // namespace
}  // namespace hangwatch::testing
