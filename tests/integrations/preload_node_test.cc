// node (Debian's /usr/bin/node) under the preload shim with its JavaScript frames off
// (HANGWATCH_JS=0: tests/js has them): JavaScript compiled by V8 runs outside every module, so
// its frames are named from the /tmp/perf-PID.map that node writes with --perf-basic-prof. A
// busy JS function is the hang's culprit, by its JavaScript name.
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kNode[] = "/usr/bin/node";

TEST(PreloadNode, BusyJavaScriptFunctionIsTheCulpritByItsName) {
  if (access(kNode, X_OK) != 0) GTEST_SKIP() << kNode << " is not installed";
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess child(
      {kNode, "--perf-basic-prof", "--no-logfile-per-isolate",
       "--logfile=" + dir.path() + "/v8.log", HANGWATCH_TEST_DATA_DIR "/busy_timer.js"},
      {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_JS=0", "HANGWATCH_THRESHOLD_MS=200",
       "HANGWATCH_REPORT=" + report, "HANGWATCH_LOG=0", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  const int status = child.Wait();
  // node leaves its perf map behind: removed here. (V8's own log went to `dir`, not to an
  // isolate-*.log in the working directory.)
  unlink(("/tmp/perf-" + std::to_string(child.pid()) + ".map").c_str());
  ASSERT_EQ(status, 0);
  tools::Report r;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(report), &r, &error)) << error;
  size_t named = 0, vdso_frames = 0, vdso_named = 0;
  for (const HangRecord& h : r.hangs) {
    EXPECT_EQ(h.process_name, "node");
    EXPECT_EQ(h.signature.size(), 16u);
    for (const Stack& s : h.stacks) {
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const auto in_vdso = [&](size_t k) {
          return k < s.frames.size() && s.frames[k].module.find("vdso") != std::string::npos;
        };
        if (!in_vdso(i)) continue;
        // Date.now() reads the clock in the vDSO. Its exported functions are named from its
        // image in memory (asserted deterministically in in_process_symbolizer_test); a static
        // helper such as vread_pvclock on a KVM guest is named only with the kernel's debug
        // package, and the frame-pointer walk out of it may skip the exported caller, so here
        // they are only counted.
        ++vdso_frames;
        if (!s.frames[i].symbol.empty()) ++vdso_named;
      }
    }
    if (h.duration_ms < 400) continue;  // start-up on a busy machine, or a hang cut by a stop
    ASSERT_NE(h.dominant(), nullptr);
    if (h.culprit.symbol.find("busyWork") == std::string::npos) continue;
    ++named;
    EXPECT_TRUE(h.culprit.module.empty()) << "JIT code is in no module";
    EXPECT_NE(h.culprit.symbol.find("busy_timer.js"), std::string::npos) << h.culprit.symbol;
  }
  EXPECT_GE(named, 2u) << ReadFile(report);
  std::printf("%zu of %zu hangs name busyWork; %zu of %zu vDSO frames named\n", named,
              r.hangs.size(), vdso_named, vdso_frames);
}

// Date.now() in a loop: the samples' innermost frames are V8's and libc's, reached from the JS
// function through a builtin copied into anonymous memory that the perf map does not name (a
// runtime frame, not the culprit).
TEST(PreloadNode, BuiltinOutsideThePerfMapGivesWayToTheJavaScriptFunction) {
  if (access(kNode, X_OK) != 0) GTEST_SKIP() << kNode << " is not installed";
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess child(
      {kNode, "--perf-basic-prof", "--no-logfile-per-isolate",
       "--logfile=" + dir.path() + "/v8.log", HANGWATCH_TEST_DATA_DIR "/spin_on_clock.js"},
      {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_JS=0", "HANGWATCH_THRESHOLD_MS=200",
       "HANGWATCH_REPORT=" + report, "HANGWATCH_LOG=0", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  const int status = child.Wait();
  unlink(("/tmp/perf-" + std::to_string(child.pid()) + ".map").c_str());
  ASSERT_EQ(status, 0);
  tools::Report r;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(report), &r, &error)) << error;
  size_t spins = 0, through_builtin = 0;
  for (const HangRecord& h : r.hangs) {
    if (h.duration_ms < 400) continue;  // start-up on a busy machine
    ++spins;
    EXPECT_NE(h.culprit.symbol.find("spinOnClock"), std::string::npos)
        << h.culprit.symbol << " at " << h.culprit.offset;
    EXPECT_TRUE(h.culprit.module.empty()) << h.culprit.module;
    // Some stack went through an unnamed frame outside every module below the JS function.
    for (const Stack& s : h.stacks) {
      for (size_t i = 0; i + 1 < s.frames.size(); ++i) {
        const Frame& f = s.frames[i];
        if (f.module.empty() && f.symbol.empty() &&
            s.frames[i + 1].symbol.find("spinOnClock") != std::string::npos) {
          ++through_builtin;
        }
      }
    }
  }
  EXPECT_EQ(spins, 3u) << ReadFile(report);
  EXPECT_GE(through_builtin, 1u) << "no sample went through an anonymous builtin; "
                                 << ReadFile(report);
}

}  // namespace
}  // namespace hangwatch::testing
