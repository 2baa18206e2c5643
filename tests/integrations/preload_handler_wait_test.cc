// A wait made inside a handler is part of the pass: unmodified programs under the preload shim
// whose event loop's handler blocks in a poll of its own (a synchronous HTTP call with
// Python's urllib, a psycopg2 query, a C handler polling a peer) report a blocked hang whose
// cause names the peer; the same loops idling report nothing
// (integrations/preload/loop_wait_sites.h).
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "hangwatch/hangwatch.h"
#include "tests/loopback_http.h"
#include "tests/postgres_server.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3.11";

tools::Report ReadReport(const std::string& path) {
  tools::Report report;
  std::string error;
  tools::ParseJsonLines(ReadFile(path), &report, &error);
  return report;
}

bool StackHas(const HangRecord& h, const std::string& symbol) {
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) {
      if (f.symbol.find(symbol) != std::string::npos) return true;
    }
  }
  return false;
}

std::vector<std::string> ShimEnv(const TempDir& dir, const std::string& threshold_ms) {
  return {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_THRESHOLD_MS=" + threshold_ms,
          "HANGWATCH_REPORT=" + dir.path() + "/hangs.jsonl", "HANGWATCH_LOG=0",
          "HANGWATCH_OPEN_HANG_DIR=" + dir.path()};
}

// Waits for the loop's one hang: the pass ended when its handler returned, and the watchdog
// writes the hang at its next tick.
tools::Report WaitForAHang(const std::string& report_path) {
  tools::Report report;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (report.hangs.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    report = ReadReport(report_path);
  }
  return report;
}

// The selectors loop's handler fetches from a server that answers after 1 s: one blocked hang
// on the main thread, in the poll of Python's socket module. Before the loop's wait was learned,
// that poll was taken as the loop idling: no hang at all.
TEST(PreloadHandlerWait, PythonUrlopenInsideASelectorsHandlerIsABlockedHang) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ChildProcess upstream({kPython, HANGWATCH_TEST_DATA_DIR "/upstream_http_server.py", "1"}, {});
  std::string line;
  ASSERT_TRUE(upstream.ReadLine(&line, std::chrono::seconds(20)));
  const std::string url = "http://127.0.0.1:" + line + "/";
  ChildProcess loop({kPython, HANGWATCH_TEST_DATA_DIR "/selectors_urlopen_loop.py", url},
                    ShimEnv(dir, "300"));
  ASSERT_TRUE(loop.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(LoopbackExchange(std::atoi(line.c_str()), "", std::chrono::seconds(20)), "done\n");
  const std::string report_path = dir.path() + "/hangs.jsonl";
  tools::Report report = WaitForAHang(report_path);
  kill(loop.pid(), SIGTERM);
  loop.Wait();
  report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_EQ(h.tid, loop.pid()) << "the main thread";
  EXPECT_GE(h.duration_ms, 800u);
  EXPECT_LT(h.duration_ms, 5000u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_TRUE(StackHas(h, "poll")) << ReadFile(report_path);
  // Why it waited: the handler's socket to the upstream server, whose process answers there.
  EXPECT_EQ(h.cause.kind, CauseKind::kIpc) << ReadFile(report_path);
  bool names_upstream = false;
  for (const CauseProcess& p : h.cause.peers) names_upstream |= p.pid == upstream.pid();
  EXPECT_TRUE(names_upstream) << "the upstream server is pid " << upstream.pid() << "\n"
                              << ReadFile(report_path);
}

// The same loop under constant load: 600 events queued before it starts, so its selector
// returns ready every time and never times out; the 300th handler fetches from the server that
// answers after 1 s. One blocked hang. Before the loop's wait was learned from its returns (a
// loop that never idles never taught it), no hang at all.
TEST(PreloadHandlerWait, PythonUrlopenInALoopThatNeverIdlesIsABlockedHang) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ChildProcess upstream({kPython, HANGWATCH_TEST_DATA_DIR "/upstream_http_server.py", "1"}, {});
  std::string line;
  ASSERT_TRUE(upstream.ReadLine(&line, std::chrono::seconds(20)));
  const std::string url = "http://127.0.0.1:" + line + "/";
  ChildProcess loop({kPython, HANGWATCH_TEST_DATA_DIR "/selectors_urlopen_loop.py", "--busy", url},
                    ShimEnv(dir, "300"));
  ASSERT_TRUE(loop.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(line, "done");
  ASSERT_EQ(loop.Wait(), 0);
  const std::string report_path = dir.path() + "/hangs.jsonl";
  const tools::Report report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_EQ(h.tid, loop.pid()) << "the main thread";
  EXPECT_GE(h.duration_ms, 800u);
  EXPECT_LT(h.duration_ms, 5000u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_TRUE(StackHas(h, "poll")) << ReadFile(report_path);
}

// The same kind of loop whose handler runs SELECT pg_sleep(1) with psycopg2 against a real
// PostgreSQL (tests/postgres_server.h): libpq polls its Unix socket for the answer, a wait
// inside the pass. One blocked hang whose cause is ipc, naming the backend that runs the query.
class PreloadHandlerWaitPostgres : public PostgresServerTest {};

TEST_F(PreloadHandlerWaitPostgres, Psycopg2QueryInsideASelectorsHandlerNamesTheBackend) {
  ChildProcess loop({kPython, HANGWATCH_TEST_DATA_DIR "/selectors_psycopg2_loop.py", dir_.path()},
                    ShimEnv(dir_, "300"));
  std::string line;
  ASSERT_TRUE(loop.ReadLine(&line, std::chrono::seconds(30)));
  int backend = 0, port = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "%d %d", &backend, &port), 2) << line;
  EXPECT_EQ(LoopbackExchange(port, "", std::chrono::seconds(20)), "done\n");
  const std::string report_path = dir_.path() + "/hangs.jsonl";
  tools::Report report = WaitForAHang(report_path);
  kill(loop.pid(), SIGTERM);
  loop.Wait();
  report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_EQ(h.tid, loop.pid()) << "the main thread";
  EXPECT_GE(h.duration_ms, 800u);
  EXPECT_LT(h.duration_ms, 5000u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_TRUE(StackHas(h, "poll")) << ReadFile(report_path);
  EXPECT_EQ(h.cause.kind, CauseKind::kIpc) << ReadFile(report_path);
  EXPECT_EQ(h.cause.path, dir_.path() + "/.s.PGSQL.5432") << ReadFile(report_path);
  ASSERT_EQ(h.cause.peers.size(), 1u) << ReadFile(report_path);
  EXPECT_EQ(h.cause.peers[0].pid, backend) << ReadFile(report_path);
  EXPECT_EQ(h.cause.peers[0].name, "postgres");
}

// The same loop idling for 3 s, its selector timing out every 100 ms: nothing to report, and no
// pass left open at exit.
TEST(PreloadHandlerWait, IdleSelectorsLoopReportsNothing) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ChildProcess loop({kPython, HANGWATCH_TEST_DATA_DIR "/selectors_urlopen_loop.py", "--idle", "3"},
                    ShimEnv(dir, "100"));
  std::string line;
  ASSERT_TRUE(loop.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(loop.Wait(), 0);
  EXPECT_TRUE(ReadReport(dir.path() + "/hangs.jsonl").hangs.empty())
      << ReadFile(dir.path() + "/hangs.jsonl");
}

// A C loop with a 100 ms timer whose handler polls a peer that does not answer for 600 ms.
TEST(PreloadHandlerWait, CHandlerPollingAPeerIsABlockedHang) {
  TempDir dir;
  ChildProcess fixture({PRELOAD_HANDLER_WAIT_FIXTURE, "600"}, ShimEnv(dir, "300"));
  ASSERT_EQ(fixture.Wait(), 0);
  const std::string report_path = dir.path() + "/hangs.jsonl";
  const tools::Report report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_EQ(h.tid, fixture.pid());
  EXPECT_GE(h.duration_ms, 550u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_TRUE(StackHas(h, "WaitForThePeer")) << ReadFile(report_path);
}

// A C loop under constant load: its poll returns ready every time and never times out (no
// idle tick to learn the loop's wait from), and every handler polls a peer from deeper in the
// stack. The 300th handler's peer does not answer for 900 ms: one blocked hang, in that poll.
// Before the loop's wait was learned from its returns, the handler's poll was taken as the loop
// idling: no hang at all.
TEST(PreloadHandlerWait, HandlerWaitInALoopThatNeverIdlesIsABlockedHang) {
  TempDir dir;
  ChildProcess fixture({PRELOAD_HANDLER_WAIT_FIXTURE, "--busy", "900"}, ShimEnv(dir, "300"));
  ASSERT_EQ(fixture.Wait(), 0);
  const std::string report_path = dir.path() + "/hangs.jsonl";
  const tools::Report report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  const HangRecord& h = report.hangs[0];
  EXPECT_EQ(h.tid, fixture.pid());
  EXPECT_GE(h.duration_ms, 850u);
  EXPECT_LT(h.duration_ms, 5000u);
  EXPECT_EQ(h.hang_class, HangClass::kBlocked);
  EXPECT_TRUE(StackHas(h, "WaitForThePeer")) << ReadFile(report_path);
  ASSERT_EQ(report.lags.size(), 1u) << ReadFile(report_path);
  EXPECT_GE(report.lags[0].passes.passes(), 590u) << "each event a pass of its own";
}

// The same loop whose 300th handler runs a nested loop of its own (the loop's wait, from deeper
// in the stack: a modal dialog's), idle for 600 ms: idle, not a hang. The 450th handler's wait
// for the silent peer is the one hang.
TEST(PreloadHandlerWait, NestedLoopInALoopThatNeverIdlesIsIdle) {
  TempDir dir;
  ChildProcess fixture({PRELOAD_HANDLER_WAIT_FIXTURE, "--busy-nested", "900"}, ShimEnv(dir, "300"));
  ASSERT_EQ(fixture.Wait(), 0);
  const std::string report_path = dir.path() + "/hangs.jsonl";
  const tools::Report report = ReadReport(report_path);
  ASSERT_EQ(report.hangs.size(), 1u) << ReadFile(report_path);
  EXPECT_GE(report.hangs[0].duration_ms, 850u);
  EXPECT_LT(report.hangs[0].duration_ms, 5000u);
  EXPECT_TRUE(StackHas(report.hangs[0], "WaitForThePeer")) << ReadFile(report_path);
  EXPECT_FALSE(StackHas(report.hangs[0], "ModalLoop")) << ReadFile(report_path);
}

// A child forked inside a handler runs an idle loop of its own, at a call site deeper than its
// parent's loop: it learns its own loop's wait (the parent's is forgotten at the fork), so its
// idle is not taken for a handler's wait.
TEST(PreloadHandlerWait, ForkedChildLearnsItsOwnLoop) {
  TempDir dir;
  ChildProcess fixture({PRELOAD_HANDLER_WAIT_FIXTURE, "--fork"}, ShimEnv(dir, "300"));
  ASSERT_EQ(fixture.Wait(), 0);
  const std::string report_path = dir.path() + "/hangs.jsonl";
  const tools::Report report = ReadReport(report_path);
  bool child_watched = false;
  for (const auto& lag : report.lags) child_watched |= lag.pid != fixture.pid();
  EXPECT_TRUE(child_watched) << "the child armed and wrote its lag record\n"
                             << ReadFile(report_path);
  EXPECT_TRUE(report.hangs.empty()) << ReadFile(report_path);
}

}  // namespace
}  // namespace hangwatch::testing
