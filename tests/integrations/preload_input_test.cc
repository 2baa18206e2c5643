// Whether a person was kept waiting, under the preload shim: Tk (python3-tk) and GTK 3
// (python3-gi) windows on a private Xvfb, each stalling in a timer callback. Keys typed by
// xdotool during the stall wait in the display connection: the hang says so (input, perceived)
// and the toolkit still receives every key afterwards (hangwatch only peeked). The same stall
// without input is not perceived; a window manager's _NET_WM_PING left waiting past the
// desktop's 5 s makes the hang not_responding.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tools/reader/report_reader.h"
#include "xvfb_server.h"

// Last: Xlib defines macros (Status, None, True...) that would rename what the headers above
// declare.
#include <X11/Xlib.h>

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kXdotool[] = "/usr/bin/xdotool";

struct Toolkit {
  const char* name;
  const char* script;
};

struct StallRun {
  bool ok = false;
  HangRecord hang;        // the stall's
  std::string keys_line;  // "keys a b c": what the toolkit received
  std::string report;
  // The main thread's lag records added up: the passes of at least a second by their own time
  // and by their queued + running time.
  uint64_t running_over_1s = 0;
  uint64_t delay_over_1s = 0;
};

// Passes of `h` of at least `ns` (whole buckets from there up).
uint64_t PassesFrom(const PassHistogram& h, uint64_t ns) {
  uint64_t n = 0;
  for (int i = pass_histogram::BucketOf(ns); i < pass_histogram::kBuckets; ++i) n += h.count(i);
  return n;
}

// Runs `script` stalling `stall_s` seconds; `during(display, window)` runs as the stall starts.
StallRun RunStall(const Toolkit& tk, const char* stall_s, bool preload,
                  const std::function<void(const std::string&, unsigned long)>& during) {
  StallRun run;
  XvfbServer xvfb;
  if (!xvfb.ok()) {
    ADD_FAILURE() << "Xvfb did not start";
    return run;
  }
  TempDir dir;
  const std::string report_path = dir.path() + "/hangs.jsonl";
  std::vector<std::string> env = {"DISPLAY=" + xvfb.display(),
                                  "NO_AT_BRIDGE=1",
                                  "GDK_BACKEND=x11",
                                  "HANGWATCH_THRESHOLD_MS=300",
                                  "HANGWATCH_REPORT=" + report_path,
                                  "HANGWATCH_LOG=0",
                                  "HANGWATCH_OPEN_HANG_DIR=" + dir.path()};
  if (preload) env.push_back("LD_PRELOAD=" HANGWATCH_PRELOAD_LIB);
  ChildProcess child({kPython, std::string(HANGWATCH_TEST_DATA_DIR "/") + tk.script, stall_s}, env);
  std::string line;
  unsigned long window = 0;
  if (!child.ReadLine(&line, std::chrono::seconds(30)) ||
      sscanf(line.c_str(), "stalling %lu", &window) != 1) {
    ADD_FAILURE() << tk.name << ": " << line;
    return run;
  }
  during(xvfb.display(), window);
  if (!child.ReadLine(&run.keys_line, std::chrono::seconds(30))) {
    ADD_FAILURE() << tk.name << ": no keys line";
    return run;
  }
  child.Wait();
  if (!preload) {
    run.ok = true;
    return run;
  }
  run.report = ReadFile(report_path);
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(run.report, &report, &error);
  for (const HangRecord& h : report.hangs) {
    if (h.duration_ms >= 1000) {
      run.hang = h;
      run.ok = true;
    }
  }
  for (const report::Lag& l : report.lags) {
    run.running_over_1s += PassesFrom(l.passes, 1'000'000'000);
    run.delay_over_1s += PassesFrom(report::DelayOf(l), 1'000'000'000);
  }
  EXPECT_TRUE(run.ok) << tk.name << ": no hang of the stall\n" << error << run.report;
  return run;
}

void TypeKeys(const std::string& display, unsigned long /*window*/) {
  ChildProcess xdotool({kXdotool, "key", "--delay", "20", "a", "b", "c"}, {"DISPLAY=" + display});
  xdotool.Wait();
}

// A window manager's ping (EWMH _NET_WM_PING): a WM_PROTOCOLS ClientMessage to the window,
// stamped with the server's time (Xvfb's clock is CLOCK_MONOTONIC in ms).
void SendPing(const std::string& display, unsigned long window) {
  Display* dpy = XOpenDisplay(display.c_str());
  ASSERT_NE(dpy, nullptr);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  XEvent ev{};
  ev.xclient.type = ClientMessage;
  ev.xclient.window = window;
  ev.xclient.message_type = XInternAtom(dpy, "WM_PROTOCOLS", False);
  ev.xclient.format = 32;
  ev.xclient.data.l[0] = static_cast<long>(XInternAtom(dpy, "_NET_WM_PING", False));
  ev.xclient.data.l[1] =
      static_cast<long>(static_cast<uint32_t>(now.tv_sec * 1000 + now.tv_nsec / 1000000));
  ev.xclient.data.l[2] = static_cast<long>(window);
  XSendEvent(dpy, window, False, NoEventMask, &ev);
  XSync(dpy, False);
  XCloseDisplay(dpy);
}

class PreloadInput : public ::testing::TestWithParam<Toolkit> {
 protected:
  void SetUp() override {
    struct stat st {};
    for (const char* path : {kPython, kXdotool, kXvfb}) {
      if (stat(path, &st) != 0) GTEST_SKIP() << path << " is not installed";
    }
  }
};

TEST_P(PreloadInput, KeysTypedDuringTheStallWereFeltAndStillReachTheToolkit) {
  const StallRun run = RunStall(GetParam(), "1.5", true, TypeKeys);
  ASSERT_TRUE(run.ok);
  const HangRecord& h = run.hang;
  ASSERT_TRUE(h.input.known) << run.report;
  EXPECT_TRUE(h.input.pending);
  EXPECT_GE(h.input.events, 6u) << run.report;  // a press and a release per key
  EXPECT_NE(std::find(h.input.kinds.begin(), h.input.kinds.end(), "key"), h.input.kinds.end());
  ASSERT_TRUE(h.input.oldest_known) << run.report;
  EXPECT_GE(h.input.oldest_ms, 100u);
  EXPECT_LE(h.input.oldest_ms, h.duration_ms);
  ASSERT_TRUE(h.perceived.has_value()) << run.report;
  EXPECT_TRUE(*h.perceived);
  EXPECT_FALSE(h.not_responding);
  // The peek took nothing away: the toolkit got every key, as it does without hangwatch.
  EXPECT_EQ(run.keys_line, "keys a b c");
  const StallRun plain = RunStall(GetParam(), "1.5", false, TypeKeys);
  EXPECT_EQ(plain.keys_line, run.keys_line);
}

TEST_P(PreloadInput, TheSameStallWithoutInputWasNotFelt) {
  const StallRun run = RunStall(GetParam(), "1.5", true, [](const std::string&, unsigned long) {});
  ASSERT_TRUE(run.ok);
  ASSERT_TRUE(run.hang.input.known) << run.report;
  EXPECT_FALSE(run.hang.input.pending) << run.report;
  ASSERT_TRUE(run.hang.perceived.has_value()) << run.report;
  EXPECT_FALSE(*run.hang.perceived);
  // Nothing waited a second: no pass is a second longer by queued + running than by its own
  // time (the stall counts once in each; GTK's timers are counted with their small lateness).
  EXPECT_GE(run.running_over_1s, 1u) << run.report;
  EXPECT_EQ(run.delay_over_1s, run.running_over_1s) << run.report;
}

INSTANTIATE_TEST_SUITE_P(Toolkits, PreloadInput,
                         ::testing::Values(Toolkit{"tk", "stall_with_input_tk.py"},
                                           Toolkit{"gtk3", "stall_with_input_gtk.py"}),
                         [](const auto& info) { return std::string(info.param.name); });

// One toolkit is enough for the ping (it is the window manager's, not the toolkit's): a stall
// past the desktop's 5 s with a ping waiting.
TEST(PreloadInputPing, APingLeftWaitingPastFiveSecondsIsNotResponding) {
  struct stat st {};
  if (stat(kPython, &st) != 0) GTEST_SKIP() << kPython << " is not installed";
  const StallRun run = RunStall(Toolkit{"gtk3", "stall_with_input_gtk.py"}, "5.6", true, SendPing);
  ASSERT_TRUE(run.ok);
  const HangRecord& h = run.hang;
  ASSERT_TRUE(h.input.known) << run.report;
  EXPECT_TRUE(h.input.ping) << run.report;
  EXPECT_GT(h.input.ping_ms, 5000u) << run.report;
  EXPECT_TRUE(h.not_responding) << run.report;
  ASSERT_TRUE(h.perceived.has_value());
  EXPECT_TRUE(*h.perceived);
}

}  // namespace
}  // namespace hangwatch::testing
