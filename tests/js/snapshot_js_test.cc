// `hangwatch snapshot PID` of a real node child (/usr/bin/node, no flag) busy in a named
// function: its main thread's stack holds the JS frames ("kind": "js", function, script, line)
// where V8 ran them, the text marking a line that is the function's first; --no-js leaves the
// native frames only.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_util.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kNode[] = "/usr/bin/node";

// node running `script`, past the line it printed before spinning.
class SpinningNode {
 public:
  explicit SpinningNode(const std::string& script) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(kNode, kNode, script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    char buffer[256];
    ssize_t n = 0;
    while (out_.find("spinning\n") == std::string::npos &&
           (n = read(fds[0], buffer, sizeof(buffer))) > 0) {
      out_.append(buffer, static_cast<size_t>(n));
    }
    close(fds[0]);
  }
  ~SpinningNode() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool spinning() const { return out_.find("spinning\n") != std::string::npos; }

 private:
  pid_t pid_ = -1;
  std::string out_;
};

// The main thread's frames of `snapshot --json` output.
nlohmann::json MainFrames(const std::string& json, pid_t pid) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("threads")) return nlohmann::json::array();
  for (const auto& t : doc["threads"]) {
    if (t.value("tid", 0) == pid) return t.value("frames", nlohmann::json::array());
  }
  return nlohmann::json::array();
}

TEST(SnapshotJs, ABusyNodeThreadShowsItsJavaScriptFunctions) {
  if (access(kNode, X_OK) != 0) GTEST_SKIP() << kNode << " is not installed";
  TempDir dir;
  const std::string script = dir / "spin.js";
  std::ofstream(script) << "function spinForSnapshot() {\n"
                           "  let x = 0;\n"
                           "  for (;;) { x = (x + 1) | 0; }\n"
                           "}\n"
                           "setTimeout(function start() {\n"
                           "  process.stdout.write('spinning\\n');\n"
                           "  spinForSnapshot();\n"
                           "}, 10);\n";
  SpinningNode node(script);
  ASSERT_TRUE(node.spinning());
  // node may still be in the write() of "spinning": snapshots until the loop is reached, bounded.
  CommandResult r;
  nlohmann::json frames;
  for (int attempt = 0; attempt < 50; ++attempt) {
    r = RunCommand({kCli, "snapshot", std::to_string(node.pid()), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    frames = MainFrames(r.out, node.pid());
    if (r.out.find("\"spinForSnapshot\"") != std::string::npos) break;
  }
  ASSERT_FALSE(frames.empty()) << r.out;
  int spin = -1, start = -1;
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto& f = frames[i];
    if (f.value("kind", "") != "js") continue;
    EXPECT_FALSE(f.value("file", "").empty()) << f;
    if (f.value("symbol", "") == "spinForSnapshot") {
      spin = static_cast<int>(i);
      EXPECT_EQ(f.value("file", ""), script);
      EXPECT_EQ(f.value("line", 0), f.value("line_is_definition", false) ? 1 : 3) << f;
    }
    if (f.value("symbol", "") == "start") start = static_cast<int>(i);
  }
  ASSERT_GE(spin, 0) << r.out;
  EXPECT_GT(start, spin) << r.out;  // the caller is outer

  // The text says so when the line is the function's first, not the running one (as the
  // report's text does): the innermost frame's line always is (js/frame_finder.h).
  const std::string leaf = "spinForSnapshot  " + script + ":1";
  CommandResult text;
  for (int attempt = 0; attempt < 50; ++attempt) {
    text = RunCommand({kCli, "snapshot", std::to_string(node.pid())});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    if (text.out.find(leaf) != std::string::npos) break;
  }
  EXPECT_NE(text.out.find(leaf + "  [the function's first line]"), std::string::npos) << text.out;

  const CommandResult off =
      RunCommand({kCli, "snapshot", std::to_string(node.pid()), "--json", "--no-js"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  for (const auto& f : MainFrames(off.out, node.pid())) EXPECT_NE(f.value("kind", ""), "js");
}

}  // namespace
}  // namespace hangwatch::testing
