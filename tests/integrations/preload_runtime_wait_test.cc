// The shim's wrappers for a runtime's wait function (integrations/preload/wait_wrapper.h), on a
// loop that waits in a stand-in for libtcl's Tcl_WaitForEvent (preload_runtime_wait_fixture.cc):
// the waits the runtime makes inside its own (a poll that returns while the runtime still waits)
// count once, and a poll() outside it, once the loop waits there, is work of the pass.
#include <gtest/gtest.h>

#include <string>

#include "child_process.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

bool DominantStackHas(const HangRecord& h, const std::string& symbol) {
  const Stack* s = h.dominant();
  if (s == nullptr) return false;
  for (const Frame& f : s->frames) {
    if (f.symbol == symbol) return true;
  }
  return false;
}

TEST(PreloadRuntimeWait, WaitsInsideCountOnceAndAPollOutsideIsWork) {
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  ChildProcess child({PRELOAD_RUNTIME_WAIT_FIXTURE},
                     {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=100",
                      "HANGWATCH_REPORT=" + report_path, "HANGWATCH_LOG=0",
                      "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  ASSERT_EQ(child.WaitAtMost(std::chrono::seconds(30)), 0);
  tools::Report report;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(report_path), &report, &error)) << error;
  // The idle waits (the three long ones: 200 ms in poll, then 200 ms after it returned) are no
  // hang; the callback's 500 ms poll is one, blocked.
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_GE(h.duration_ms, 400u);
  EXPECT_LT(h.duration_ms, 1000u) << "a runtime wait counted in the callback's hang";
  EXPECT_STREQ(HangClassName(h.hang_class), "blocked");
  EXPECT_TRUE(DominantStackHas(h, "CallbackThatPolls")) << ReadFile(report_path);
  EXPECT_FALSE(DominantStackHas(h, "Tcl_WaitForEvent")) << ReadFile(report_path);
  // The loop was busy for the callback only: the time each runtime wait went on after its inner
  // poll returned is no pass (10 x 30 ms after a zero-time poll would add 300 ms).
  ASSERT_EQ(report.lags.size(), 1u) << ReadFile(report_path);
  EXPECT_LT(report.lags[0].passes.Figures().busy_ms, 700.0) << ReadFile(report_path);
}

}  // namespace
}  // namespace hangwatch::testing
