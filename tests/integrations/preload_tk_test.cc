// Tcl/Tk from Debian's packages under the preload shim. Threaded Tcl 8.6 idles its main thread on
// a condition variable inside Tcl_WaitForEvent while a notifier thread polls, so the shim, armed
// at an Xlib poll() during `wish`'s start-up, saw no wait after it: an idle `wish` was a 3 s
// blocked hang, an 800 ms busy callback a 1.6 s mixed one, and `tclsh` (no X) was never watched.
// Python's tkinter (Debian's python3-tk) reaches libtcl through a module loaded with RTLD_LOCAL.
// Each test starts its own Xvfb and its own interpreter, in a temporary directory.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "tools/reader/report_reader.h"
#include "xvfb_server.h"

namespace hangwatch::testing {
namespace {

constexpr char kWish[] = "/usr/bin/wish";
constexpr char kTclsh[] = "/usr/bin/tclsh";

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An 800 ms computation in a timer callback (a loop on the clock), with idle before and after
// it: neither may be counted in its hang.
constexpr char kBusyCallback[] = R"(
proc busy {ms} {
  set end [expr {[clock milliseconds] + $ms}]
  while {[clock milliseconds] < $end} {}
}
after 300 {busy 800; after 300 exit}
)";

// Python's tkinter: the same, in a loop that reaches libtcl through a module Python loaded with
// RTLD_LOCAL (where dlsym(RTLD_NEXT) does not see Tcl_WaitForEvent).
constexpr char kTkinterBusyCallback[] = R"(
import time, tkinter
root = tkinter.Tk()
def busy():
    end = time.monotonic() + 0.8
    while time.monotonic() < end:
        pass
    root.after(300, root.destroy)
root.after(300, busy)
root.mainloop()
)";

// One script, file `script_name`, run by `interpreter` under the shim (DISPLAY set when `display`
// is not empty); it exits by itself. A script that prints "idle" when its event loop starts
// waiting (an idle handler) has the time noted.
struct ScriptRun {
  TempDir dir;
  std::string report_path = dir.path() + "/hangs.jsonl";
  std::string launch_log_path = dir.path() + "/launch.log";
  pid_t pid = 0;
  int exit_code = -1;
  int64_t idle_from_ms = 0;  // when "idle" was read; 0 when it was not
  tools::Report report;

  ScriptRun(const char* interpreter, const char* script_name, const std::string& script,
            const std::string& display) {
    const std::string script_path = dir.path() + "/" + script_name;
    std::ofstream(script_path) << script;
    std::vector<std::string> env = {
        "LD_PRELOAD=" HANGWATCH_PRELOAD_LIB,     "HANGWATCH_THRESHOLD_MS=100",
        "HANGWATCH_REPORT=" + report_path,       "HANGWATCH_LOG=0",
        "HANGWATCH_OPEN_HANG_DIR=" + dir.path(), "HANGWATCH_LAUNCH_LOG=" + launch_log_path};
    if (!display.empty()) env.push_back("DISPLAY=" + display);
    ChildProcess child({interpreter, script_path}, env);
    pid = child.pid();
    std::string line;
    if (child.ReadLine(&line, std::chrono::seconds(30)) && line == "idle") {
      idle_from_ms = NowUnixMs();
    }
    exit_code = child.WaitAtMost(std::chrono::seconds(30));
    std::string error;
    tools::ParseJsonLines(ReadFile(report_path), &report, &error);
  }

  // The shim armed in the interpreter (the launch log's "armed" event, launch_log.h).
  bool Watched() const {
    std::istringstream log(ReadFile(launch_log_path));
    const std::string armed = "armed " + std::to_string(pid) + " ";
    for (std::string line; std::getline(log, line);) {
      if (line.rfind(armed, 0) == 0) return true;
    }
    return false;
  }
};

bool DominantStackHas(const HangRecord& h, const std::string& symbol) {
  const Stack* s = h.dominant();
  if (s == nullptr) return false;
  for (const Frame& f : s->frames) {
    if (f.symbol == symbol) return true;
  }
  return false;
}

// Nothing of the idle may be reported: every hang (a start-up pass stretched by a busy machine)
// ends before the loop started waiting, give or take the time the line took to reach us.
void ExpectIdleNotReported(const ScriptRun& run) {
  ASSERT_GT(run.idle_from_ms, 0) << "the script never reached its event loop";
  for (const HangRecord& h : run.report.hangs) {
    EXPECT_LT(h.start_unix_ms + static_cast<int64_t>(h.duration_ms), run.idle_from_ms + 500)
        << "idle time reported as a hang:\n"
        << ReadFile(run.report_path);
  }
}

// The 800 ms callback is exactly one hang on the main thread, of class `hang_class`, and none of
// the idle around it (300 ms before and after) is counted in it. Shorter hangs are left out: a
// busy machine may stretch a start-up pass.
void ExpectOneHangOfTheCallback(const ScriptRun& run, const char* hang_class,
                                const char* frame_symbol) {
  EXPECT_EQ(run.exit_code, 0);
  std::vector<const HangRecord*> long_hangs;
  for (const HangRecord& h : run.report.hangs) {
    if (h.duration_ms >= 600) long_hangs.push_back(&h);
  }
  ASSERT_EQ(long_hangs.size(), 1u) << ReadFile(run.report_path);
  const HangRecord& h = *long_hangs[0];
  EXPECT_EQ(h.tid, run.pid) << "the main thread";
  EXPECT_STREQ(HangClassName(h.hang_class), hang_class) << ReadFile(run.report_path);
  EXPECT_LT(h.duration_ms, 1200u) << "idle time counted in the callback's hang";
  EXPECT_TRUE(DominantStackHas(h, frame_symbol)) << ReadFile(run.report_path);
  EXPECT_FALSE(DominantStackHas(h, "Tcl_WaitForEvent")) << ReadFile(run.report_path);
}

#define SKIP_WITHOUT(path)     \
  if (access(path, X_OK) != 0) \
  GTEST_SKIP() << path << " is not installed (Debian packages tk, xvfb)"

TEST(PreloadTk, IdleWishIsNoHang) {
  SKIP_WITHOUT(kWish);
  SKIP_WITHOUT(kXvfb);
  XvfbServer x;
  ASSERT_TRUE(x.ok()) << "Xvfb did not start";
  ScriptRun run(kWish, "idle.tcl", "after idle {puts idle; flush stdout}\nafter 3000 exit\n",
                x.display());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.Watched()) << ReadFile(run.launch_log_path);
  ExpectIdleNotReported(run);
}

TEST(PreloadTk, BusyCallbackIsOneBusyHangOfItsOwnLength) {
  SKIP_WITHOUT(kWish);
  SKIP_WITHOUT(kXvfb);
  XvfbServer x;
  ASSERT_TRUE(x.ok()) << "Xvfb did not start";
  ScriptRun run(kWish, "busy.tcl", kBusyCallback, x.display());
  // Tcl_ServiceEvent: the timer callback runs, out of the loop's wait.
  ExpectOneHangOfTheCallback(run, "busy", "Tcl_ServiceEvent");
}

// Tcl's `after 800` sleeps in select() (Tcl_Sleep): inside a callback it holds the loop up, it is
// not the loop waiting.
TEST(PreloadTk, SleepInACallbackIsOneBlockedHang) {
  SKIP_WITHOUT(kWish);
  SKIP_WITHOUT(kXvfb);
  XvfbServer x;
  ASSERT_TRUE(x.ok()) << "Xvfb did not start";
  ScriptRun run(kWish, "sleep.tcl", "after 300 {after 800; after 300 exit}\n", x.display());
  ExpectOneHangOfTheCallback(run, "blocked", "Tcl_Sleep");
}

// tclsh has no X connection: its first wait is Tcl_WaitForEvent itself (no poll() on the main
// thread at all), where the shim arms.
TEST(PreloadTk, TclshWaitingInVwaitIsWatchedAndIdle) {
  SKIP_WITHOUT(kTclsh);
  ScriptRun run(kTclsh, "vwait.tcl",
                "after idle {puts idle; flush stdout}\nafter 2000 {set done 1}\nvwait done\n", "");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.Watched()) << "tclsh's loop was not found\n" << ReadFile(run.launch_log_path);
  ExpectIdleNotReported(run);
}

TEST(PreloadTk, TkinterBusyCallbackIsOneBusyHangOfItsOwnLength) {
  SKIP_WITHOUT(kXvfb);
  if (std::system("/usr/bin/python3 -c 'import tkinter' 2>/dev/null") != 0) {
    GTEST_SKIP() << "Python's tkinter is not installed (Debian package python3-tk)";
  }
  XvfbServer x;
  ASSERT_TRUE(x.ok()) << "Xvfb did not start";
  ScriptRun run("/usr/bin/python3", "busy.py", kTkinterBusyCallback, x.display());
  ExpectOneHangOfTheCallback(run, "busy", "Tcl_ServiceEvent");
}

}  // namespace
}  // namespace hangwatch::testing
