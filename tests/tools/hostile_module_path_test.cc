// A report names its modules' paths, and the offline tools open those files to symbolize. A
// hostile report can name a FIFO (open(2) waits for a writer forever) or a
// device (/dev/zero never ends): `report` in every format, `top` and `gate` must end promptly
// with those frames unsymbolized. Each command runs under timeout(1), so a command that blocks
// is killed (exit 137) instead of hanging the suite.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_util.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr int kKilled = 128 + 9;

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
}

class HostileModulePath : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
    // A real report with its two modules moved: the program to a FIFO, libc to /dev/zero (with
    // build-ids no debug directory has).
    std::string report = ReadFile(absl::StrCat(FUZZ_CORPUS_DIR, "/valid_hang.jsonl"));
    ASSERT_FALSE(report.empty());
    ReplaceAll(&report, "/work/main/build-cli/tests/tools/stall_program", fifo_);
    ReplaceAll(&report, "/lib/x86_64-linux-gnu/libc.so.6", "/dev/zero");
    ReplaceAll(&report, "40aa15fba21cbb70df95c6f00fc003637a244d3b",
               "0000000000000000000000000000000000000001");
    ReplaceAll(&report, "93ac61ec5a8eb1396f9fbd350e3169a558528a40",
               "0000000000000000000000000000000000000002");
    ASSERT_TRUE(Has(report, fifo_) && Has(report, "/dev/zero"));
    WriteFile(report_, report);
  }

  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/timeout", "-s", "KILL", "120", kCli});
    return RunCommand(args, {"HANGWATCH_CACHE_DIR=" + dir_ / "cache"});
  }

  TempDir dir_;
  const std::string fifo_ = dir_ / "module.fifo";
  const std::string report_ = dir_ / "hangs.jsonl";
};

TEST_F(HostileModulePath, ReportInEveryFormatEndsWithTheFramesUnsymbolized) {
  for (const char* format : {"text", "json", "folded", "trace"}) {
    const CommandResult r = Run({"report", report_, "--format", format});
    ASSERT_NE(r.exit_code, kKilled) << format << ": blocked on the FIFO or the device";
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
  }
  const CommandResult text = Run({"report", report_});
  // The frames keep the names the agent wrote, and nothing was read from the files.
  EXPECT_TRUE(Has(text.out, "StallTheMainThread")) << text.out;
  const CommandResult html = Run({"report", report_, "--format", "html", "-o", dir_ / "o.html"});
  ASSERT_NE(html.exit_code, kKilled) << "html: blocked";
  EXPECT_EQ(html.exit_code, 0) << html.err;
}

TEST_F(HostileModulePath, TopAndGateEnd) {
  const CommandResult top = Run({"top", report_});
  ASSERT_NE(top.exit_code, kKilled) << "top: blocked";
  EXPECT_EQ(top.exit_code, 0) << top.err;
  const CommandResult gate = Run({"gate", report_});
  ASSERT_NE(gate.exit_code, kKilled) << "gate: blocked";
  EXPECT_EQ(gate.exit_code, 3) << gate.err;  // a hang and no baseline: failed, not stuck
}

}  // namespace
}  // namespace hangwatch::testing
