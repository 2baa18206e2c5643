// An unmodified event-loop program from Debian's packages under the preload shim: python3
// running a small asyncio HTTP server (data/slow_http_server.py). A request whose handler blocks
// the main thread for a second is reported with the handler's Python frames (or the C function
// it blocks in); an idle server reports nothing.
#include <dirent.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "hang/open_hang/open_hang_file.h"
#include "hangwatch/hangwatch.h"
#include "tests/loopback_http.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// The shim armed the agent in `pid`: its watchdog thread exists. Waits up to 10 s.
bool WaitForAgentThread(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  while (std::chrono::steady_clock::now() < deadline) {
    if (DIR* d = opendir(dir.c_str())) {
      bool found = false;
      while (dirent* e = readdir(d)) {
        if (ReadFile(dir + "/" + e->d_name + "/comm") == "hangwatch\n") found = true;
      }
      closedir(d);
      if (found) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Waits up to 15 s for `count` hangs in the JSON Lines report.
tools::Report WaitForHangs(const std::string& path, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  tools::Report report;
  while (std::chrono::steady_clock::now() < deadline) {
    report = tools::Report{};
    std::string error;
    tools::ParseJsonLines(ReadFile(path), &report, &error);
    if (report.hangs.size() >= count) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return report;
}

bool StackHas(const Stack& s, const std::string& symbol, const std::string& module_part) {
  for (const Frame& f : s.frames) {
    if (f.symbol.find(symbol) != std::string::npos &&
        f.module.find(module_part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

struct Server {
  TempDir dir;
  std::string report = dir.path() + "/hangs.jsonl";
  std::unique_ptr<ChildProcess> child;
  int port = 0;

  explicit Server(const std::string& threshold_ms) {
    child = std::make_unique<ChildProcess>(
        std::vector<std::string>{kPython, HANGWATCH_TEST_DATA_DIR "/slow_http_server.py"},
        std::vector<std::string>{"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB,
                                 "HANGWATCH_THRESHOLD_MS=" + threshold_ms,
                                 "HANGWATCH_REPORT=" + report, "HANGWATCH_LOG=0",
                                 "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
    std::string line;
    if (child->ReadLine(&line, std::chrono::seconds(20))) port = std::atoi(line.c_str());
  }
};

TEST(PreloadPython, BlockingRequestIsReportedWithTheHandlersFrames) {
  Server server("300");
  ASSERT_GT(server.port, 0);
  ASSERT_TRUE(WaitForAgentThread(server.child->pid()));
  EXPECT_NE(LoopbackGet(server.port, "/quick").find("200 OK"), std::string::npos);
  EXPECT_NE(LoopbackGet(server.port, "/slow?busy").find("200 OK"), std::string::npos);
  WaitForHangs(server.report, 1);
  EXPECT_NE(LoopbackGet(server.port, "/slow?sleep").find("200 OK"), std::string::npos);
  tools::Report both = WaitForHangs(server.report, 2);
  kill(server.child->pid(), SIGTERM);
  server.child->Wait();

  // Only the two slow requests count; a busy machine may stretch other passes (start-up).
  std::vector<HangRecord> slow;
  for (const HangRecord& h : both.hangs) {
    if (h.duration_ms >= 900) slow.push_back(h);
  }
  ASSERT_EQ(slow.size(), 2u) << ReadFile(server.report);
  const HangRecord& b = slow[0];
  EXPECT_EQ(b.pid, server.child->pid());
  EXPECT_EQ(b.tid, server.child->pid()) << "the main thread";
  EXPECT_GE(b.duration_ms, 900u);
  EXPECT_LT(b.duration_ms, 3000u);
  // The handler's Python loop: its Python frames, in place of the interpreter's eval loop
  // (agent/samplers/python_stacks.h).
  bool handler = false;
  bool eval_loop = false;
  for (const Stack& s : b.stacks) {
    for (const Frame& f : s.frames) {
      handler |= f.language == FrameLanguage::kPython && f.symbol == "block_the_loop" &&
                 f.file.find("slow_http_server.py") != std::string::npos;
    }
    eval_loop |= StackHas(s, "_PyEval_EvalFrameDefault", "python3");
  }
  EXPECT_TRUE(handler) << ReadFile(server.report);
  EXPECT_FALSE(eval_loop) << ReadFile(server.report);
  EXPECT_NE(b.hang_class, HangClass::kBlocked);

  // The sleeping handler: blocked, in the C function doing the blocking.
  const HangRecord& s = slow[1];
  EXPECT_GE(s.duration_ms, 900u);
  EXPECT_EQ(s.hang_class, HangClass::kBlocked);
  ASSERT_NE(s.dominant(), nullptr);
  ASSERT_FALSE(s.dominant()->frames.empty());
  EXPECT_NE(s.dominant()->frames[0].symbol.find("nanosleep"), std::string::npos)
      << ReadFile(server.report);
}

// The same blocking line called again and again: one fingerprint, one signature, one culprit,
// although CPython 3.11 specializes the call site after a few calls and then reaches time.sleep
// from another instruction of its eval loop, through fewer C frames (cfunction_vectorcall_O and
// PyObject_Vectorcall are skipped): two fingerprints before the fix. The culprit is the Python
// function that made the call.
TEST(PreloadPython, TheSameBlockingCallHasOneFingerprintAcrossCalls) {
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess child(
      {kPython, HANGWATCH_TEST_DATA_DIR "/same_call_repeated.py", "12"},
      {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=100",
       "HANGWATCH_REPORT=" + report, "HANGWATCH_LOG=0", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  EXPECT_EQ(child.Wait(), 0);
  tools::Report r;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(report), &r, &error)) << error;
  std::vector<const HangRecord*> sleeps;
  std::set<size_t> depths;
  for (const HangRecord& h : r.hangs) {
    const Stack* d = h.dominant();
    if (h.duration_ms < 200 || d == nullptr || d->frames.empty() ||
        d->frames[0].symbol.find("nanosleep") == std::string::npos) {
      continue;  // a slow start-up pass on a busy machine
    }
    sleeps.push_back(&h);
    depths.insert(d->frames.size());
  }
  ASSERT_GE(sleeps.size(), 10u) << ReadFile(report);
  EXPECT_GE(depths.size(), 2u) << "the interpreter specialized the call: stacks of two shapes";
  for (const HangRecord* h : sleeps) {
    EXPECT_EQ(h->fingerprint, sleeps[0]->fingerprint) << ReadFile(report);
    EXPECT_EQ(h->signature, sleeps[0]->signature);
    EXPECT_EQ(h->process_name, "python3");
    // The Python function that blocks, at the same line whichever instruction the specialized
    // call ran from (its instruction, the frame's offset, may differ:
    // agent/samplers/python_stacks.h).
    EXPECT_EQ(h->culprit.symbol, "blocked") << ReadFile(report);
    EXPECT_EQ(h->culprit.line, sleeps[0]->culprit.line);
    EXPECT_NE(h->culprit.file.find("same_call_repeated.py"), std::string::npos) << h->culprit.file;
  }
}

// Minutes of idle must report nothing. The suite cannot idle for minutes, so the threshold is
// scaled down instead: 4 s of idle at a 20 ms threshold is 200 thresholds long, as 50 s would
// be at the default 250 ms.
TEST(PreloadPython, IdleServerReportsNothing) {
  Server server("20");
  ASSERT_GT(server.port, 0);
  ASSERT_TRUE(WaitForAgentThread(server.child->pid()));
  const auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t idle_from = now_ms();
  std::this_thread::sleep_for(std::chrono::seconds(4));  // the idle being tested
  kill(server.child->pid(), SIGTERM);
  server.child->Wait();
  // A pass still running when the server was killed (e.g. the idle not seen as idle) is left
  // in the open-hang file.
  const std::string open_hang =
      server.dir.path() + "/open-hang." + std::to_string(server.child->pid());
  ASSERT_EQ(access(open_hang.c_str(), R_OK), 0) << "the agent keeps an open-hang file";
  HangRecord open;
  std::string why;
  EXPECT_EQ(agent::ReadOpenHangFile(open_hang, &open, &why), agent::OpenHangReadStatus::kNoOpenHang)
      << why << hangwatch::ToJsonLine(open);
  // Passes of the server's start-up (before the idle) may be slow on a busy machine; nothing
  // may start during the idle.
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(server.report), &report, &error);
  for (const HangRecord& h : report.hangs) {
    EXPECT_LT(h.start_unix_ms, idle_from) << ReadFile(server.report);
  }
}

}  // namespace
}  // namespace hangwatch::testing
