// What an unmodified GLib program's hang dispatched, under the preload shim: the agent library
// wraps GLib's own source types (integrations/preload/glib_sources.h), found at run time. A C++
// program linked with GLib (preload_glib_fixture.cc: a named timeout source), Python loading
// GLib after the shim armed (data/glib_timeout_late.py: an unnamed one), and HANGWATCH_CONTEXT=0.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Runs `argv` under the shim with `env` added, expects `lines` on its stdout, and returns the
// hangs of its report.
std::vector<HangRecord> HangsOf(const std::vector<std::string>& argv,
                                const std::vector<std::string>& lines,
                                std::vector<std::string> env = {}) {
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  env.insert(env.end(), {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=300",
                         "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                         "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  ChildProcess child(argv, env);
  for (const std::string& expected : lines) {
    std::string line;
    EXPECT_TRUE(child.ReadLine(&line, std::chrono::seconds(30))) << "expected " << expected;
    EXPECT_EQ(line, expected);
  }
  EXPECT_EQ(child.WaitAtMost(std::chrono::seconds(30)), 0);
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  EXPECT_TRUE(error.empty()) << error;
  return report.hangs;
}

TEST(PreloadGLibSource, NamedTimeoutSourceAndItsCallback) {
  const auto hangs = HangsOf({PRELOAD_GLIB_FIXTURE}, {"done"});
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].context.source, "thumbnail-timer");
  EXPECT_NE(hangs[0].context.callback.find("StallThumbnailTimer"), std::string::npos)
      << hangs[0].context.callback;
}

TEST(PreloadGLibSource, GLibLoadedAfterArmingIsNamedOnceAHangFoundIt) {
  struct stat st {};
  if (stat(kPython, &st) != 0) GTEST_SKIP() << kPython << " is not installed";
  const auto hangs = HangsOf({kPython, HANGWATCH_TEST_DATA_DIR "/glib_timeout_late.py"},
                             {"glib before import: no", "done"});
  ASSERT_EQ(hangs.size(), 2u);
  // The first hang has the shim find GLib (its dispatch began unwrapped); the script stalls
  // again once it sees g_timeout_funcs wrapped: that hang is named.
  EXPECT_EQ(hangs[0].context.source, "");
  EXPECT_EQ(hangs[1].context.source, "GTimeoutSource");
  EXPECT_FALSE(hangs[1].context.callback.empty());
}

TEST(PreloadGLibSource, ContextOffNamesNoSource) {
  const auto hangs = HangsOf({PRELOAD_GLIB_FIXTURE}, {"done"}, {"HANGWATCH_CONTEXT=0"});
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].context.source, "");
  EXPECT_EQ(hangs[0].context.callback, "");
}

}  // namespace
}  // namespace hangwatch::testing
