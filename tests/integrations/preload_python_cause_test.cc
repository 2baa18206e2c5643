// Why a Python program's loop waited, under the preload shim: /usr/bin/python3.11 running an
// asyncio loop whose handler takes a threading.Lock held by another thread (a semaphore in
// CPython: a lock without an owner to name), then calls time.sleep (data/lock_and_sleep.py).
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3.11";

TEST(PreloadPythonCause, ThreadingLockIsASemaphoreAndTimeSleepIsASleep) {
  struct stat st {};
  if (stat(kPython, &st) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  ChildProcess child({kPython, HANGWATCH_TEST_DATA_DIR "/lock_and_sleep.py"},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=300",
                      "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                      "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  std::string line;
  ASSERT_TRUE(child.ReadLine(&line, std::chrono::seconds(30)));
  EXPECT_EQ(line, "done");
  child.Wait();
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  ASSERT_EQ(report.hangs.size(), 2u) << error << ReadFile(report_path);
  const HangRecord& lock = report.hangs[0];
  ASSERT_EQ(lock.cause.kind, CauseKind::kLock) << lock.cause.summary;
  EXPECT_EQ(lock.cause.lock.type, "semaphore") << lock.cause.summary;
  EXPECT_FALSE(lock.cause.has_owner);
  EXPECT_NE(lock.cause.summary.find("waiting on semaphore 0x"), std::string::npos)
      << lock.cause.summary;
  const HangRecord& sleep = report.hangs[1];
  ASSERT_EQ(sleep.cause.kind, CauseKind::kSleep) << sleep.cause.summary;
  // CPython 3.11 sleeps until a deadline (clock_nanosleep with TIMER_ABSTIME): the length asked
  // for is not in the call, and the summary says how long the hang slept.
  EXPECT_NE(sleep.cause.summary.find("slept " + std::to_string(sleep.duration_ms) +
                                     " ms on the main thread (clock_nanosleep("),
            std::string::npos)
      << sleep.cause.summary;
  EXPECT_GE(sleep.duration_ms, 500u);
}

}  // namespace
}  // namespace hangwatch::testing
