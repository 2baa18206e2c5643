// What began each slow pass of an unmodified program, under the preload shim: a Python
// selectors (epoll) loop whose handler stalls after a client's request, after the loop's own
// time-out and after an eventfd wake-up (data/selectors_triggers.py). Each hang's trigger names
// the event: the TCP connection and the client process, the time-out asked for, the eventfd.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3.11";

TEST(PreloadContext, EachHangNamesWhatBeganItsPass) {
  struct stat st {};
  if (stat(kPython, &st) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  ChildProcess child({kPython, HANGWATCH_TEST_DATA_DIR "/selectors_triggers.py"},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=300",
                      "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                      "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  std::string line;
  ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(30)));
  int client_pid = 0, client_port = 0;
  ASSERT_EQ(sscanf(line.c_str(), "client %d %d", &client_pid, &client_port), 2) << line;
  ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(30)));
  EXPECT_EQ(line, "done");
  child.Wait();

  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  ASSERT_EQ(report.hangs.size(), 3u) << error << ReadFile(report_path);

  const Trigger& request = report.hangs[0].context.trigger;
  ASSERT_TRUE(report.hangs[0].context.has_trigger) << ReadFile(report_path);
  EXPECT_EQ(request.kind, "socket");
  EXPECT_EQ(request.detail, "tcp");
  EXPECT_EQ(request.peer, "127.0.0.1:" + std::to_string(client_port));
  EXPECT_EQ(request.pid, client_pid);
  EXPECT_EQ(request.process.rfind("python3", 0), 0u) << request.process;
  EXPECT_EQ(request.ready, 1u);

  const Trigger& timer = report.hangs[1].context.trigger;
  EXPECT_EQ(timer.kind, "timeout");
  EXPECT_EQ(timer.timeout_ms, 200u);
  EXPECT_EQ(timer.fd, -1);

  const Trigger& wakeup = report.hangs[2].context.trigger;
  EXPECT_EQ(wakeup.kind, "eventfd");
  EXPECT_GE(wakeup.fd, 0);
}

}  // namespace
}  // namespace hangwatch::testing
