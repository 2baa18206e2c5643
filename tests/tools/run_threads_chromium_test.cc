// `hangwatch run --threads loops` on a real program with several loop threads: Chromium
// (Debian's `chromium`, headless), idle for 4 s. Besides its main thread, its Chrome_IOThread
// (an epoll loop whose waits carry a time-out hours away) is watched, and its helper threads that
// poll (inotify_reader, sandbox_ipc_thread, its thread pool) give no hang: no false hang in an
// idle period.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>

#include "cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kChromium[] = "/usr/bin/chromium";

TEST(RunThreadsChromium, IdleHeadlessChromiumHasNoHangOnAnyWatchedThread) {
  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << kChromium << " is not installed";
  TempDir dir;
  const std::string report_path = dir / "hangs.jsonl";
  const CommandResult r = RunCommand(
      {kCli, "run", "--threads", "loops", "--report", report_path, "--", "/usr/bin/timeout", "-s",
       "TERM", "4", kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       "--user-data-dir=" + (dir / "profile"), "--remote-debugging-port=0", "about:blank"},
      {"HOME=" + dir.path(), "HANGWATCH_LAG_INTERVAL_MS=1000"});
  EXPECT_EQ(r.exit_code, 124) << "timeout stopped it\n" << r.err;
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  std::set<std::string> roles;
  for (const auto& lag : report.lags) roles.insert(lag.thread_role);
  EXPECT_TRUE(roles.count("Chrome_IOThread")) << "watched besides main\n" << r.err;
  EXPECT_TRUE(report.hangs.empty()) << ReadFile(report_path);
  EXPECT_NE(r.err.find("lag of thread Chrome_IOThread"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hangwatch::testing
