// `hangwatch run` on Debian's python3.11 (issue 25): the hang's stacks in the --report file hold
// the program's Python frames (function, file, line) in place of the interpreter's eval loop,
// as the embedded agent records them (tests/integrations/preload_python_frames_test.cc has
// every shape of Python hang; this one checks that `run`'s launch carries them through).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kPython[] = "/usr/bin/python3.11";
const std::string kProgram = PYTHON_FRAMES_PROGRAM;

int MarkedLine(const std::string& name) {
  std::ifstream in(kProgram);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find("# mark: " + name) != std::string::npos) return n;
  }
  return -1;
}

TEST(RunPythonFrames, ASleepingHandlersHangNamesItsPythonFunctionAndLine) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const std::string report = dir / "hangs.jsonl";
  const auto r = RunCommand(
      {kCli, "run", "--threshold-ms", "300", "--report", report, "--", kPython, kProgram, "sleep"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  tools::Report parsed;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(report), &parsed, &error)) << error;
  const HangRecord* hang = nullptr;
  for (const HangRecord& h : parsed.hangs) {
    if (h.duration_ms >= 400) hang = &h;
  }
  ASSERT_NE(hang, nullptr) << ReadFile(report);
  ASSERT_NE(hang->dominant(), nullptr);
  bool sleeper = false;
  for (const Frame& f : hang->dominant()->frames) {
    if (f.language != FrameLanguage::kPython || f.symbol != "sleeper") continue;
    sleeper = true;
    EXPECT_EQ(f.file, kProgram);
    EXPECT_EQ(f.line, MarkedLine("sleep"));
  }
  EXPECT_TRUE(sleeper) << ReadFile(report);
}

}  // namespace
}  // namespace hangwatch::testing
