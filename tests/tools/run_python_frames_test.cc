// `hangwatch run` on Debian's python3.11: the hang's stacks in the --report file hold
// the program's Python frames (function, file, line) in place of the interpreter's eval loop,
// as the embedded agent records them (tests/integrations/preload_python_frames_test.cc has
// every shape of Python hang; this one checks that `run`'s launch carries them through).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

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

// The hang of `scenario` (at least 400 ms long) in the report of `hangwatch run [flags] --
// python3.11 python_frames.py scenario`; fails the test when there is none.
HangRecord RunScenario(const TempDir& dir, const std::string& scenario,
                       const std::vector<std::string>& flags, std::string* report_text) {
  static int runs = 0;  // one report file per run
  const std::string report = dir / (scenario + std::to_string(++runs) + ".jsonl");
  std::vector<std::string> argv = {kCli, "run", "--threshold-ms", "300", "--report", report};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a : {std::string("--"), std::string(kPython), kProgram, scenario}) {
    argv.push_back(a);
  }
  const auto r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  *report_text = ReadFile(report);
  tools::Report parsed;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(*report_text, &parsed, &error)) << error;
  for (const HangRecord& h : parsed.hangs) {
    if (h.duration_ms >= 400 && h.dominant() != nullptr) return h;
  }
  ADD_FAILURE() << "no hang of " << scenario << ": " << *report_text;
  return HangRecord{};
}

size_t PythonFrames(const Stack& s, const std::string& symbol) {
  size_t n = 0;
  for (const Frame& f : s.frames) n += f.language == FrameLanguage::kPython && f.symbol == symbol;
  return n;
}

TEST(RunPythonFrames, ASleepingHandlersHangNamesItsPythonFunctionAndLine) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  std::string report;
  const HangRecord h = RunScenario(dir, "sleep", {}, &report);
  const HangRecord* hang = &h;
  ASSERT_NE(hang->dominant(), nullptr);
  bool sleeper = false;
  for (const Frame& f : hang->dominant()->frames) {
    if (f.language != FrameLanguage::kPython || f.symbol != "sleeper") continue;
    sleeper = true;
    EXPECT_EQ(f.file, kProgram);
    EXPECT_EQ(f.line, MarkedLine("sleep"));
  }
  EXPECT_TRUE(sleeper) << report;
}

// --max-frames reaches the agent: a recursion 200 deep keeps all its Python frames with 300,
// and is cut at the default 64.
TEST(RunPythonFrames, MaxFramesKeepsADeepRecursionWhole) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  std::string report;
  const HangRecord deep = RunScenario(dir, "recursion", {"--max-frames", "300"}, &report);
  ASSERT_NE(deep.dominant(), nullptr);
  EXPECT_EQ(PythonFrames(*deep.dominant(), "recurse"), 201u) << report;
  const HangRecord cut = RunScenario(dir, "recursion", {}, &report);
  ASSERT_NE(cut.dominant(), nullptr);
  EXPECT_LT(PythonFrames(*cut.dominant(), "recurse"), 64u) << report;
  EXPECT_GT(PythonFrames(*cut.dominant(), "recurse"), 0u) << report;
}

// --no-python reaches the agent: the same hang names the interpreter's frames, no Python ones.
TEST(RunPythonFrames, NoPythonLeavesTheInterpretersFrames) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  std::string report;
  const HangRecord h = RunScenario(dir, "busy", {"--no-python"}, &report);
  ASSERT_NE(h.dominant(), nullptr);
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) EXPECT_EQ(f.language, FrameLanguage::kNative) << report;
  }
  const HangRecord with = RunScenario(dir, "busy", {}, &report);
  ASSERT_NE(with.dominant(), nullptr);
  EXPECT_GT(PythonFrames(*with.dominant(), "busy"), 0u) << report;
}

// Bad values of the new flags: one line, exit 2, the command never started.
TEST(RunPythonFrames, BadMaxFramesIsOneLineAndExit2) {
  const auto r = RunCommand({kCli, "run", "--max-frames", "0", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-frames wants 1..1024, not '0'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hangwatch::testing
