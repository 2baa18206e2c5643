// Hangs in stripped binaries keep their identities (docs/report-format.md: signature,
// fingerprint, culprit). Debian's python3.11 has no .symtab and most of its functions are not in
// .dynsym; stripped_busy_program has no symbols at all. Their unnamed frames are told apart by
// the start of their function, so a busy loop and a sleep are two kinds of hang (`gate` does not
// take one for the other), the same hang keeps its signature and culprit from run to run, and a
// hang read back from the open-hang file of a process killed by SIGKILL has the identity it has
// when reported live. Real programs (real_component); each run is a second or two.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hang/open_hang/open_hang_file.h"
#include "report/stack_identity.h"
#include "tests/integrations/child_process.h"
#include "tests/tools/gunicorn_server.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3.11";

// Between waits of its event loop (selectors), `rounds` hangs of `seconds` each, of one kind:
// "busy" (a pure-Python loop), "sum" (sum() over ranges: C code of the interpreter), "sleep"
// (time.sleep: blocked in the kernel). Prints "hang" as each one begins.
constexpr char kScript[] = R"(import selectors, sys, time
mode, rounds, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sel = selectors.DefaultSelector()
def busy(end):
    n = 0
    while time.monotonic() < end:
        n += 1
def summing(end):
    while time.monotonic() < end:
        sum(range(100000))
for _ in range(rounds):
    sel.select(0.05)
    print("hang", flush=True)
    end = time.monotonic() + seconds
    if mode == "busy":
        busy(end)
    elif mode == "sum":
        summing(end)
    else:
        time.sleep(seconds)
sel.select(0.05)
)";

struct WatchedRun {
  std::string report;  // path of the JSON Lines report
  std::vector<HangRecord> hangs;
};

std::vector<std::string> ShimEnv(const TempDir& dir, const std::string& report) {
  return {"LD_PRELOAD=" PRELOAD_SHIM, "HANGWATCH_THRESHOLD_MS=200", "HANGWATCH_REPORT=" + report,
          "HANGWATCH_LOG=0", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()};
}

// The hangs of at least 400 ms in a JSON Lines file (a hang of the scenario, not a slow
// start-up on a busy machine).
std::vector<HangRecord> LongHangs(const std::string& jsonl) {
  tools::Report r;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(jsonl, &r, &error)) << error;
  std::vector<HangRecord> out;
  for (HangRecord& h : r.hangs) {
    if (h.duration_ms >= 400) out.push_back(std::move(h));
  }
  return out;
}

// Runs argv under the preload shim to its end; its hangs.
WatchedRun RunWatched(const TempDir& dir, const std::string& name,
                      const std::vector<std::string>& argv) {
  WatchedRun run;
  run.report = absl::StrCat(dir.path(), "/", name, ".jsonl");
  ChildProcess child(argv, ShimEnv(dir, run.report));
  EXPECT_EQ(child.WaitAtMost(std::chrono::seconds(60)), 0) << name;
  run.hangs = LongHangs(ReadFile(run.report));
  return run;
}

std::string WriteScript(const TempDir& dir) {
  const std::string path = dir.path() + "/hangs.py";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(kScript, f);
  std::fclose(f);
  return path;
}

WatchedRun RunPython(const TempDir& dir, const std::string& name, const std::string& mode,
                     int rounds) {
  return RunWatched(dir, name, {kPython, WriteScript(dir), mode, std::to_string(rounds), "0.6"});
}

// The one signature all hangs of `run` share (fails when they differ or there are none).
std::string OnlySignature(const WatchedRun& run, const std::string& what) {
  std::set<std::string> signatures;
  for (const HangRecord& h : run.hangs) signatures.insert(h.signature);
  EXPECT_EQ(signatures.size(), 1u) << what << ": " << ReadFile(run.report);
  return signatures.empty() ? "" : *signatures.begin();
}

std::string CulpritOf(const HangRecord& h) {
  return absl::StrCat(CulpritLabel(h.culprit, CulpritLabelStyle::kName), " in ", h.culprit.module);
}

// The culprit as "the same culprit" means it across runs: for a Python function, its qualified
// name and file without the line. The line of a Python culprit is where most samples saw it
// (report/stack_identity.cc), and a busy loop spans several lines (the `while` test, its body),
// so which one wins differs from run to run while the function is the same; the signature
// leaves the line out for the same reason (FunctionIdentity). A native culprit is compared whole.
std::string CulpritFunctionOf(const HangRecord& h) {
  Culprit c = h.culprit;
  if (c.language == FrameLanguage::kPython) c.line = 0;
  return absl::StrCat(CulpritLabel(c, CulpritLabelStyle::kName), " in ", c.module);
}

bool HavePython() { return access(kPython, X_OK) == 0; }

TEST(StrippedIdentity, PythonBusyLoopSumAndSleepAreThreeKindsOfHang) {
  if (!HavePython()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const WatchedRun busy = RunPython(dir, "busy", "busy", 2);
  const WatchedRun busy_again = RunPython(dir, "busy-again", "busy", 1);
  const WatchedRun sum = RunPython(dir, "sum", "sum", 2);
  const WatchedRun sleep = RunPython(dir, "sleep", "sleep", 2);
  const WatchedRun sleep_again = RunPython(dir, "sleep-again", "sleep", 1);
  ASSERT_EQ(busy.hangs.size(), 2u) << ReadFile(busy.report);
  ASSERT_EQ(sum.hangs.size(), 2u) << ReadFile(sum.report);
  ASSERT_EQ(sleep.hangs.size(), 2u) << ReadFile(sleep.report);
  const std::string busy_sig = OnlySignature(busy, "busy");
  const std::string sum_sig = OnlySignature(sum, "sum");
  const std::string sleep_sig = OnlySignature(sleep, "sleep");
  // Three kinds of hang, three signatures (they were one, "?@python3.11" five times).
  EXPECT_NE(busy_sig, sleep_sig);
  EXPECT_NE(busy_sig, sum_sig);
  EXPECT_NE(sum_sig, sleep_sig);
  // The same hang in another run of the same binary: the same signature.
  EXPECT_EQ(OnlySignature(busy_again, "busy, second run"), busy_sig);
  EXPECT_EQ(OnlySignature(sleep_again, "sleep, second run"), sleep_sig);
}

// The samples of a pure-Python loop spread over many interpreter functions (each stack holds a
// few of them); the culprit is what most samples share: the same function in every run (its
// line may differ, CulpritFunctionOf).
TEST(StrippedIdentity, PythonBusyLoopHasTheSameCulpritInThreeRuns) {
  if (!HavePython()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  std::set<std::string> culprits;
  size_t spread = 0, hangs = 0;
  for (int i = 0; i < 3; ++i) {
    const WatchedRun run = RunPython(dir, absl::StrCat("busy", i), "busy", 2);
    ASSERT_EQ(run.hangs.size(), 2u) << ReadFile(run.report);
    for (const HangRecord& h : run.hangs) {
      ++hangs;
      culprits.insert(CulpritFunctionOf(h));
      // The dominant stack holds fewer than half of the samples: it is no culprit's source.
      if (!h.stacks.empty() && 2 * h.stacks[0].count < h.samples) ++spread;
    }
  }
  EXPECT_EQ(culprits.size(), 1u) << ::testing::PrintToString(culprits);
  EXPECT_GE(spread, 1u) << "of " << hangs << " hangs, none had its samples spread";
}

TEST(StrippedIdentity, TwoUnnamedFunctionsOfAStrippedProgramHaveTwoSignatures) {
  TempDir dir;
  const WatchedRun a = RunWatched(dir, "a", {STRIPPED_BUSY_PROGRAM, "a"});
  const WatchedRun a_again = RunWatched(dir, "a-again", {STRIPPED_BUSY_PROGRAM, "a"});
  const WatchedRun b = RunWatched(dir, "b", {STRIPPED_BUSY_PROGRAM, "b"});
  ASSERT_EQ(a.hangs.size(), 2u) << ReadFile(a.report);
  ASSERT_EQ(b.hangs.size(), 2u) << ReadFile(b.report);
  const std::string a_sig = OnlySignature(a, "a");
  EXPECT_NE(a_sig, OnlySignature(b, "b"));
  EXPECT_EQ(OnlySignature(a_again, "a, second run"), a_sig);
  // Both culprits are the program's unnamed functions, at two places.
  const Culprit& ca = a.hangs[0].culprit;
  const Culprit& cb = b.hangs[0].culprit;
  EXPECT_EQ(ca.module, STRIPPED_BUSY_PROGRAM);
  EXPECT_EQ(cb.module, STRIPPED_BUSY_PROGRAM);
  EXPECT_TRUE(ca.symbol.empty()) << ca.symbol;
  const auto start = [](const HangRecord& h) {
    const Stack& s = h.stacks.at(static_cast<size_t>(h.culprit.stack));
    return s.frames.at(static_cast<size_t>(h.culprit.frame)).function_start;
  };
  EXPECT_NE(start(a.hangs[0]), 0u);
  EXPECT_NE(start(a.hangs[0]), start(b.hangs[0]));
}

// Runs `mode` for 30 s, kills it with SIGKILL during its hang once the open-hang file holds 10
// samples, and reads that file back as `hangwatch report` does.
HangRecord KilledDuringHang(const TempDir& dir, const std::string& mode) {
  const std::string report = absl::StrCat(dir.path(), "/killed-", mode, ".jsonl");
  ChildProcess child({kPython, WriteScript(dir), mode, "1", "30"}, ShimEnv(dir, report));
  std::string line;
  EXPECT_TRUE(child.ReadLine(&line, std::chrono::seconds(20))) << "the script never started";
  const std::string path = absl::StrCat(dir.path(), "/open-hang.", child.pid());
  HangRecord open;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string why;
    open = HangRecord{};
    if (agent::ReadOpenHangFile(path, &open, &why) == agent::OpenHangReadStatus::kFound &&
        open.samples >= 10) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(open.samples, 10u) << "no open hang in " << path;
  kill(child.pid(), SIGKILL);
  EXPECT_EQ(child.Wait(), 128 + SIGKILL);
  // Read back by the command line, as a user reads what a killed process left.
  const std::string json = absl::StrCat(dir.path(), "/fatal-", mode, ".json");
  ChildProcess reader({HANGWATCH_CLI, "report", path, "--format", "json", "-o", json}, {});
  EXPECT_EQ(reader.WaitAtMost(std::chrono::seconds(60)), 0);
  tools::Report fatal;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(ReadFile(json), &fatal, &error)) << error;
  EXPECT_EQ(fatal.hangs.size(), 1u) << ReadFile(json);
  if (fatal.hangs.empty()) return HangRecord{};
  EXPECT_TRUE(fatal.hangs[0].fatal);
  return fatal.hangs[0];
}

TEST(StrippedIdentity, FatalHangReadBackHasTheIdentityOfTheLiveOne) {
  if (!HavePython()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const WatchedRun sleep = RunPython(dir, "sleep", "sleep", 1);
  ASSERT_EQ(sleep.hangs.size(), 1u) << ReadFile(sleep.report);
  const HangRecord fatal_sleep = KilledDuringHang(dir, "sleep");
  EXPECT_EQ(fatal_sleep.signature, sleep.hangs[0].signature);
  EXPECT_EQ(fatal_sleep.fingerprint, sleep.hangs[0].fingerprint);
  EXPECT_EQ(CulpritOf(fatal_sleep), CulpritOf(sleep.hangs[0]));

  // A busy loop's dominant stack is one of many (its fingerprint follows it); what identifies
  // the hang, its signature and culprit, is the same.
  const WatchedRun busy = RunPython(dir, "busy", "busy", 1);
  ASSERT_EQ(busy.hangs.size(), 1u) << ReadFile(busy.report);
  const HangRecord fatal_busy = KilledDuringHang(dir, "busy");
  EXPECT_EQ(fatal_busy.signature, busy.hangs[0].signature);
  // Two runs (the live one, the killed one): the busy loop's culprit line may differ between
  // them (CulpritFunctionOf); the sleep's above is one line, compared whole.
  EXPECT_EQ(CulpritFunctionOf(fatal_busy), CulpritFunctionOf(busy.hangs[0]));
}

// gunicorn (Debian's, on python3.11): a sync worker whose request handler sleeps, reported live,
// and the same handler killed with SIGKILL in its hang, read back from the worker's open-hang
// file. They were two rows in `top` (3d3fc6cb.../25e9edef... against 3920d715.../b9416bec...).
constexpr char kWsgiApp[] = R"(import os, time
def application(environ, start_response):
    seconds = float(environ.get("QUERY_STRING") or "0")
    print("worker", os.getpid(), flush=True)
    time.sleep(seconds)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
)";

// gunicorn_server.h's server under the shim, one sync worker.
struct Gunicorn : GunicornServer {
  Gunicorn(const TempDir& dir, const std::string& report)
      : GunicornServer(dir.path(), {}, ShimEnv(dir, report), {"--workers", "1"},
                       "app:application") {}
  // Sends a quick request and, once its worker has armed (a sync worker may handle a request it
  // accepted before its first wait), returns the worker's pid; 0 on failure.
  pid_t ArmedWorker() {
    const int fd = SendRequest(socket, "/?");
    if (fd < 0) return 0;
    std::string line;
    const bool answered = ReadAnswer(fd).find("ok") != std::string::npos;
    if (!answered || !child.ReadLine(&line, std::chrono::seconds(20)) ||
        line.rfind("worker ", 0) != 0) {
      return 0;
    }
    const pid_t worker = std::stoi(line.substr(7));
    return Armed(worker) ? worker : 0;
  }
};

TEST(StrippedIdentity, GunicornWorkerKilledInItsHangHasTheIdentityOfTheLiveHang) {
  if (!HavePython() || access(kGunicorn, R_OK) != 0) {
    GTEST_SKIP() << kGunicorn << " or " << kPython << " is not installed";
  }
  TempDir dir;
  FILE* f = std::fopen((dir.path() + "/app.py").c_str(), "w");
  std::fputs(kWsgiApp, f);
  std::fclose(f);

  const std::string live_report = dir.path() + "/live.jsonl";
  HangRecord live;
  {
    Gunicorn server(dir, live_report);
    const pid_t worker = server.ArmedWorker();
    ASSERT_NE(worker, 0) << "no worker armed";
    const int fd = SendRequest(server.socket, "/?0.8");
    ASSERT_GE(fd, 0) << "gunicorn never answered";
    EXPECT_NE(ReadAnswer(fd).find("ok"), std::string::npos);
    EXPECT_EQ(server.Stop(), 0);
    // The worker's hang (the master's own shutdown may be slow on a busy machine).
    std::vector<HangRecord> hangs = LongHangs(ReadFile(live_report));
    std::erase_if(hangs, [&](const HangRecord& h) { return h.pid != worker; });
    ASSERT_EQ(hangs.size(), 1u) << ReadFile(live_report);
    live = hangs[0];
  }

  Gunicorn server(dir, dir.path() + "/killed.jsonl");
  const pid_t worker = server.ArmedWorker();
  ASSERT_NE(worker, 0) << "no worker armed";
  const int fd = SendRequest(server.socket, "/?30");
  ASSERT_GE(fd, 0) << "gunicorn never answered";
  const std::string path = absl::StrCat(dir.path(), "/open-hang.", worker);
  HangRecord open;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline && open.samples < 10) {
    std::string why;
    open = HangRecord{};
    agent::ReadOpenHangFile(path, &open, &why);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(open.samples, 10u) << "no open hang in " << path;
  kill(worker, SIGKILL);
  close(fd);
  EXPECT_EQ(server.Stop(), 0);
  const std::string json = dir.path() + "/fatal.json";
  ChildProcess reader({HANGWATCH_CLI, "report", path, "--format", "json", "-o", json}, {});
  ASSERT_EQ(reader.WaitAtMost(std::chrono::seconds(60)), 0);
  tools::Report fatal;
  std::string error;
  ASSERT_TRUE(tools::ParseJsonLines(ReadFile(json), &fatal, &error)) << error;
  ASSERT_EQ(fatal.hangs.size(), 1u) << ReadFile(json);
  EXPECT_TRUE(fatal.hangs[0].fatal);
  EXPECT_EQ(fatal.hangs[0].fingerprint, live.fingerprint);
  EXPECT_EQ(fatal.hangs[0].signature, live.signature);
  EXPECT_EQ(CulpritOf(fatal.hangs[0]), CulpritOf(live));
}

TEST(StrippedIdentity, GateWithTheSleepAsBaselineFailsOnABusyLoop) {
  if (!HavePython()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  const WatchedRun sleep = RunPython(dir, "sleep", "sleep", 1);
  const WatchedRun sleep_again = RunPython(dir, "sleep-again", "sleep", 1);
  const WatchedRun busy = RunPython(dir, "busy", "busy", 1);
  ASSERT_EQ(busy.hangs.size(), 1u) << ReadFile(busy.report);
  ChildProcess known({HANGWATCH_CLI, "gate", sleep_again.report, "--baseline", sleep.report}, {});
  EXPECT_EQ(known.WaitAtMost(std::chrono::seconds(60)), 0) << "the same sleep is known";
  ChildProcess fresh({HANGWATCH_CLI, "gate", busy.report, "--baseline", sleep.report}, {});
  EXPECT_EQ(fresh.WaitAtMost(std::chrono::seconds(60)), 3) << "a busy loop is a new hang";
}

}  // namespace
}  // namespace hangwatch::testing
