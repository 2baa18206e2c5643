// How a program watched by the preload shim ends, on the unmodified Debian python3: as fast and
// with the same status as without the shim.
//   - os._exit() (forked workers do it) has the watchdog write its last records, answered at
//     once however long the threshold (the watchdog is woken, not waited for);
//   - a main thread that ends with pthread_exit() leaves the process to its other threads: when
//     there are none, it ends, even though the watchdog (which blocks every signal) is still
//     there when the main thread goes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "child_process.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

struct PythonExit {
  int exit_code = -1;  // -1: still running after the bound (then killed)
  std::string report;
};

// Runs `body` under the shim with a threshold of `threshold_ms` and waits at most `bound` for it
// to end on its own.
PythonExit RunPython(const std::string& body, std::chrono::seconds bound,
                     const std::string& threshold_ms) {
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess child({kPython, "-c", "import ctypes, os, select\n" + body},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_REPORT=" + report,
                      "HANGWATCH_THRESHOLD_MS=" + threshold_ms, "HANGWATCH_LOG=0"});
  PythonExit r;
  r.exit_code = child.WaitAtMost(bound);
  r.report = ReadFile(report);
  return r;
}

TEST(PreloadExit, OsExitIsNotHeldUpByALongThreshold) {
  // Arms at the first select(), then leaves at once. At a 10-minute threshold the watchdog has
  // just gone to sleep for two minutes (its check interval), or until its lag interval of one.
  const PythonExit r = RunPython("select.select([], [], [], 0.01)\nos._exit(7)\n",
                                 std::chrono::seconds(10), "600000");
  EXPECT_EQ(r.exit_code, 7) << "the exit waited for the watchdog's next tick";
  EXPECT_NE(r.report.find("\"type\":\"lag\""), std::string::npos)
      << "the last lag interval was written before the exit:\n"
      << r.report;
}

TEST(PreloadExit, PthreadExitFromMainEndsTheProcess) {
  // A 100 ms threshold: the watchdog notices the thread is gone within a second, long after the
  // pass it left "running" crossed the threshold.
  const PythonExit r = RunPython(
      "select.select([], [], [], 0.01)\n"
      "ctypes.CDLL(None).pthread_exit(None)\n",
      std::chrono::seconds(10), "100");
  EXPECT_EQ(r.exit_code, 0) << "the process outlived its last thread of its own";
  // The pass the main thread left "running" when it ended is not a hang.
  EXPECT_EQ(r.report.find("\"duration_ms\""), std::string::npos) << r.report;
  // (That the agent is armed in this set-up, and reports a hang of a thread that then ends, is
  // AHangBeforePthreadExitIsStillReported: the absence above is not a silent agent.)
}

TEST(PreloadExit, AHangBeforePthreadExitIsStillReported) {
  // 400 ms busy, then the thread ends inside that pass: the hang was sampled while the thread
  // ran, so it is real, and reported, though its pass never ended.
  const PythonExit r = RunPython(
      "import time\n"
      "select.select([], [], [], 0.01)\n"
      "end = time.monotonic() + 0.4\n"
      "while time.monotonic() < end: pass\n"
      "ctypes.CDLL(None).pthread_exit(None)\n",
      std::chrono::seconds(10), "100");
  EXPECT_EQ(r.exit_code, 0);
  const size_t first = r.report.find("\"duration_ms\"");
  ASSERT_NE(first, std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("\"duration_ms\"", first + 1), std::string::npos) << "one hang\n"
                                                                            << r.report;
  EXPECT_NE(r.report.find("\"class\":\"busy\""), std::string::npos) << r.report;
}

}  // namespace
}  // namespace hangwatch::testing
