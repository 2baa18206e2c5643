// `hangwatch snapshot PID` of a real ruby3.1 (frames_program.rb) blocked in a named method:
// its Ruby frames in the main thread's stack (text and --json "kind": "ruby"), in place of the
// VM's rb_vm_exec frames; a forked child's too (its thread found by its pthread_t); none with
// --no-ruby.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/python/python_child.h"
#include "tests/tools/cli_util.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kRuby[] = "/usr/bin/ruby";

class SnapshotRuby : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kRuby, X_OK) != 0) GTEST_SKIP() << kRuby << " is not installed";
  }

  // A forked child outlives its parent, which the test kills: it goes too.
  void TearDown() override {
    if (target_ > 0 && target_ != child_.pid()) kill(target_, SIGKILL);
  }

  void Start(const std::string& mode) {
    ASSERT_TRUE(child_.Start({kRuby, FRAMES_PROGRAM, mode}));
    ASSERT_TRUE(child_.WaitReady()) << "no ready line from ruby";
    target_ = child_.ready_tid();  // the process (and main thread) to snapshot
  }

  // The Ruby frames of the target's main thread in `snapshot --json`, innermost first, as
  // "label file:line" (file without its directory).
  std::vector<std::string> RubyFrames(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kCli, "snapshot", std::to_string(target_), "--json"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return out;
    for (const auto& t : j["threads"]) {
      if (t["tid"].get<int>() != target_) continue;
      for (const auto& f : t["frames"]) {
        if (!f.contains("kind") || f["kind"] != "ruby") continue;
        const std::string file = f["file"].get<std::string>();
        out.push_back(f["symbol"].get<std::string>() + " " + file.substr(file.rfind('/') + 1) +
                      ":" + std::to_string(f["line"].get<int>()));
      }
    }
    return out;
  }

  // Until the innermost Ruby frame is sleeper's (the program gets there after its ready line).
  std::vector<std::string> WaitForSleeper() {
    std::vector<std::string> frames;
    const uint64_t deadline = python::testing::MonotonicMs() + 20000;
    while (python::testing::MonotonicMs() < deadline) {
      frames = RubyFrames({});
      if (!frames.empty() && frames[0].starts_with("sleeper ")) break;
      usleep(20000);  // no event says when it got there
    }
    return frames;
  }

  python::testing::PythonChild child_;
  pid_t target_ = 0;
};

TEST_F(SnapshotRuby, BlockedMethodsRubyFramesInTheStack) {
  Start("sleep");
  const std::vector<std::string> expected = {
      "sleeper frames_program.rb:14",  "recurse frames_program.rb:18",
      "recurse frames_program.rb:19",  "recurse frames_program.rb:19",
      "recurse frames_program.rb:19",  "block in in_block frames_program.rb:23",
      "in_block frames_program.rb:23", "<main> frames_program.rb:48"};
  EXPECT_EQ(WaitForSleeper(), expected);
  // The text output too.
  const auto text = RunCommand({kCli, "snapshot", std::to_string(target_)});
  EXPECT_NE(text.out.find("ruby  sleeper  "), std::string::npos) << text.out;
}

// A forked child's thread carries its parent's tid (Ruby 3.1): found by its pthread_t.
TEST_F(SnapshotRuby, ForkedChildsRubyFrames) {
  Start("fork");
  ASSERT_NE(target_, child_.pid());
  const std::vector<std::string> frames = WaitForSleeper();
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0], "sleeper frames_program.rb:14");
  EXPECT_EQ(frames[frames.size() - 2], "block in <main> frames_program.rb:42");
  EXPECT_EQ(frames.back(), "<main> frames_program.rb:40");
}

TEST_F(SnapshotRuby, NoRubyShowsNone) {
  Start("sleep");
  ASSERT_FALSE(WaitForSleeper().empty());
  EXPECT_TRUE(RubyFrames({"--no-ruby"}).empty());
}

}  // namespace
}  // namespace hangwatch::testing
