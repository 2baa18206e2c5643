// `hangwatch run` on Debian's ruby3.1: the hangs of a real IO.select loop (app.rb, also in a
// forked child: fork_app.rb; killed while stuck: stuck_app.rb) and of a
// real Rack application served by WEBrick (rack_app.rb, its connection thread watched with
// --threads loops) name the Ruby method that ran, with its file and line (the line of the
// "# mark:" comment), as the culprit; --no-ruby leaves the VM's native frames only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/tools/cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kRuby[] = "/usr/bin/ruby";
const std::string kApp = RUBY_APP;
const std::string kRackApp = RUBY_RACK_APP;
const std::string kForkApp = RUBY_FORK_APP;
const std::string kStuckApp = RUBY_STUCK_APP;

int MarkedLine(const std::string& program, const std::string& name) {
  std::ifstream in(program);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find("# mark: " + name) != std::string::npos) return n;
  }
  return -1;
}

// The hangs of at least 400 ms in the report of `hangwatch run [flags] -- ruby program`.
std::vector<HangRecord> RunRuby(const TempDir& dir, const std::string& program,
                                const std::vector<std::string>& flags, std::string* report_text) {
  static int runs = 0;  // one report file per run
  const std::string report = dir / ("run" + std::to_string(++runs) + ".jsonl");
  std::vector<std::string> argv = {kCli, "run", "--threshold-ms", "300", "--report", report};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a : {std::string("--"), std::string(kRuby), program}) argv.push_back(a);
  const auto r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  *report_text = ReadFile(report);
  tools::Report parsed;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(*report_text, &parsed, &error)) << error;
  std::vector<HangRecord> hangs;
  for (const HangRecord& h : parsed.hangs) {
    if (h.duration_ms >= 400 && h.dominant() != nullptr) hangs.push_back(h);
  }
  return hangs;
}

size_t RubyFrames(const HangRecord& h) {
  size_t n = 0;
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) n += f.language == FrameLanguage::kRuby;
  }
  return n;
}

class RunRubyFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kRuby, X_OK) != 0) GTEST_SKIP() << kRuby << " is not installed";
  }
  TempDir dir_;
  std::string report_;
};

TEST_F(RunRubyFrames, IOSelectLoopsBusyHandlerIsTheCulpritWithItsLine) {
  const std::vector<HangRecord> hangs = RunRuby(dir_, kApp, {}, &report_);
  ASSERT_EQ(hangs.size(), 1u) << report_;
  const Culprit& c = hangs[0].culprit;
  EXPECT_EQ(c.language, FrameLanguage::kRuby) << report_;
  EXPECT_EQ(c.symbol, "crunch") << report_;
  EXPECT_EQ(c.file.substr(c.file.rfind('/') + 1), "app.rb") << report_;
  EXPECT_EQ(c.line, MarkedLine(kApp, "crunch-loop")) << report_;
  EXPECT_FALSE(c.line_is_definition);
  // Its callers too, in the dominant stack: handle, then the loop at the script's top.
  bool handle = false;
  for (const Frame& f : hangs[0].dominant()->frames) {
    handle |= f.language == FrameLanguage::kRuby && f.symbol == "handle";
  }
  EXPECT_TRUE(handle) << report_;
}

// A forked worker's hang (the child's thread still carries its parent's tid in Ruby 3.1).
TEST_F(RunRubyFrames, ForkedWorkersHandlerIsTheCulprit) {
  const std::vector<HangRecord> hangs = RunRuby(dir_, kForkApp, {}, &report_);
  ASSERT_EQ(hangs.size(), 1u) << report_;
  EXPECT_EQ(hangs[0].culprit.language, FrameLanguage::kRuby) << report_;
  EXPECT_EQ(hangs[0].culprit.symbol, "crunch") << report_;
  EXPECT_EQ(hangs[0].culprit.line, MarkedLine(kForkApp, "crunch-loop")) << report_;
}

// A hang the process never came back from (killed): read back from the open-hang file, its
// Ruby frames keep their names.
TEST_F(RunRubyFrames, FatalHangKeepsItsRubyNames) {
  const std::string report = dir_ / "fatal.jsonl";
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "300", "--report", report, "--",
                             "timeout", "-s", "KILL", "2", kRuby, kStuckApp});
  report_ = ReadFile(report);
  tools::Report parsed;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(report_, &parsed, &error)) << error;
  const HangRecord* fatal = nullptr;
  for (const HangRecord& h : parsed.hangs) {
    if (h.fatal) fatal = &h;
  }
  ASSERT_NE(fatal, nullptr) << r.err << report_;
  EXPECT_EQ(fatal->culprit.language, FrameLanguage::kRuby) << report_;
  EXPECT_EQ(fatal->culprit.symbol, "spin") << report_;
  EXPECT_EQ(fatal->culprit.line, MarkedLine(kStuckApp, "spin-loop")) << report_;
}

TEST_F(RunRubyFrames, NoRubyLeavesTheVmsFrames) {
  const std::vector<HangRecord> hangs = RunRuby(dir_, kApp, {"--no-ruby"}, &report_);
  ASSERT_EQ(hangs.size(), 1u) << report_;
  EXPECT_EQ(RubyFrames(hangs[0]), 0u) << report_;
  EXPECT_EQ(hangs[0].culprit.language, FrameLanguage::kNative) << report_;
}

TEST_F(RunRubyFrames, RackHandlerInWebrickConnectionThreadIsTheCulprit) {
  const std::vector<HangRecord> hangs = RunRuby(dir_, kRackApp, {"--threads", "loops"}, &report_);
  // The connection thread's hang (the client thread, waiting for the answer, may hang too).
  const HangRecord* server = nullptr;
  for (const HangRecord& h : hangs) {
    if (h.culprit.symbol == "slow_report") server = &h;
  }
  ASSERT_NE(server, nullptr) << report_;
  EXPECT_EQ(server->culprit.language, FrameLanguage::kRuby);
  EXPECT_EQ(server->culprit.file.substr(server->culprit.file.rfind('/') + 1), "rack_app.rb");
  EXPECT_EQ(server->culprit.line, MarkedLine(kRackApp, "slow-loop")) << report_;
  EXPECT_NE(server->thread_role, "main");
  // The Rack application's call, under WEBrick's service, in the same stack.
  bool call = false;
  for (const Frame& f : server->dominant()->frames) {
    call |= f.language == FrameLanguage::kRuby && f.symbol == "call" &&
            f.file.find("rack_app.rb") != std::string::npos;
  }
  EXPECT_TRUE(call) << report_;
}

}  // namespace
}  // namespace hangwatch::testing
