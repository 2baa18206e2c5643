// `hangwatch run -- node app.js` on the real /usr/bin/node, started without any flag: the hang's
// culprit is the script's own JavaScript function ("kind": "js", its file and a line), whether
// the function computes (a busy loop in a timer callback), waits in a synchronous native call
// (fs.readFileSync on a FIFO nobody writes yet, crypto.pbkdf2Sync, child_process.execSync) or is
// an HTTP server's request handler. The scripts are written by the test; the FIFO is written and
// the HTTP request sent by the test. HANGWATCH_JS=0 (run --no-js) gives no JS frame.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/loopback_http.h"
#include "tests/tools/cli_util.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kNode[] = "/usr/bin/node";

void WriteScript(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The 1-based line of the first line of `text` holding `mark`.
int LineOf(const std::string& text, const std::string& mark) {
  int line = 1;
  const size_t at = text.find(mark);
  if (at == std::string::npos) return -1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

// `hangwatch run --report R [flags] -- node script args...`; the longest hang of the report.
HangRecord RunNode(const TempDir& dir, const std::string& script,
                   const std::vector<std::string>& args, const std::vector<std::string>& flags,
                   std::string* report_text) {
  static int runs = 0;
  const std::string report = dir / ("report" + std::to_string(++runs) + ".jsonl");
  std::vector<std::string> argv = {kCli, "run", "--threshold-ms", "200", "--report", report};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.push_back(kNode);
  argv.push_back(script);
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  *report_text = ReadFile(report);
  tools::Report parsed;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(*report_text, &parsed, &error)) << error;
  const HangRecord* longest = nullptr;
  for (const HangRecord& h : parsed.hangs) {
    if (longest == nullptr || h.duration_ms > longest->duration_ms) longest = &h;
  }
  if (longest == nullptr) {
    ADD_FAILURE() << "no hang: " << r.err << *report_text;
    return HangRecord{};
  }
  return *longest;
}

// The culprit is JS function `symbol` of `script`, at the line it runs (`executing`) where V8
// can say, else at its first line (`definition`), marked as such.
void ExpectJsCulprit(const HangRecord& h, const std::string& symbol, const std::string& script,
                     int definition, int executing, const std::string& report) {
  EXPECT_EQ(h.culprit.language, FrameLanguage::kJs) << report;
  EXPECT_EQ(h.culprit.symbol, symbol) << report;
  EXPECT_EQ(h.culprit.file, script) << report;
  EXPECT_EQ(h.culprit.line, h.culprit.line_is_definition ? definition : executing) << report;
}

class RunJsFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << kNode << " is not installed";
  }
  TempDir dir_;
};

constexpr char kBusy[] =
    "function crunch(ms) {\n"
    "  const end = Date.now() + ms;\n"
    "  let x = 0;\n"
    "  while (Date.now() < end) { x += Math.sqrt(x + 1); }  // mark: loop\n"
    "  return x;\n"
    "}\n"
    "setTimeout(function tick() { crunch(700); }, 300);\n";

TEST_F(RunJsFrames, ABusyLoopInATimerCallbackIsTheCulprit) {
  const std::string script = dir_ / "app.js";
  WriteScript(script, kBusy);
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {}, &report);
  EXPECT_GE(h.duration_ms, 500u);
  ExpectJsCulprit(h, "crunch", script, 1, LineOf(kBusy, "mark: loop"), report);
  // Its caller too, named in the dominant stack.
  bool tick = false;
  ASSERT_NE(h.dominant(), nullptr);
  for (const Frame& f : h.dominant()->frames) {
    tick |= f.language == FrameLanguage::kJs && f.symbol == "tick" && f.file == script;
  }
  EXPECT_TRUE(tick) << report;
}

// A loop that allocates closures and objects all the time: samples land in V8's allocation
// builtins (V8 calls its copy of them mapped beside the JIT code) and in garbage collections,
// and the function stays named in nearly all of them (before: a quarter of the samples lost it
// and the culprit was sometimes its caller).
TEST_F(RunJsFrames, AnAllocatingLoopStaysNamedThroughItsBuiltinsAndCollections) {
  const std::string script = dir_ / "churn.js";
  WriteScript(script,
              "function churn(ms) {\n"
              "  const end = Date.now() + ms;\n"
              "  let keep = [];\n"
              "  while (Date.now() < end) {\n"
              "    const fns = [];\n"
              "    for (let i = 0; i < 1000; i++) fns.push(() => i + keep.length);\n"
              "    keep = fns.map((f) => ({ v: f(), s: 'x' + f() }));\n"
              "  }\n"
              "  return keep.length;\n"
              "}\n"
              "setTimeout(function tick() { churn(1000); }, 200);\n");
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {}, &report);
  EXPECT_EQ(h.culprit.symbol, "churn") << report;
  // Every sample names churn but those taken inside an allocation's garbage collection whose
  // native unwind stops at V8's builtin frame (docs/js.md, "Limits": the frames out of it are
  // not found, so nothing is named there, never something else). Under load a collection waits
  // longer on its helper threads and more samples land in one: they are counted apart.
  size_t with = 0, all = 0, in_gc_unwound_short = 0;
  for (const Stack& s : h.stacks) {
    bool churn = false, in_gc = false;
    for (const Frame& f : s.frames) {
      churn |= f.language == FrameLanguage::kJs && f.symbol == "churn";
      in_gc |= f.symbol.find("Runtime_AllocateIn") != std::string::npos;
    }
    all += s.count;
    with += churn ? s.count : 0;
    in_gc_unwound_short += !churn && in_gc ? s.count : 0;
  }
  EXPECT_GE(with * 10, (all - in_gc_unwound_short) * 9)
      << with << " of " << all << " samples name churn, " << in_gc_unwound_short
      << " in a collection\n"
      << report;
  EXPECT_GE(with * 2, all) << "most samples name churn";
}

// An async function resumed by a microtask: named; V8's own await closure (no script) stays a
// native frame and is never the culprit (before: the culprit was "(anonymous)", no file).
TEST_F(RunJsFrames, AnAsyncFunctionIsNamedAndV8sOwnClosuresAreNot) {
  const std::string script = dir_ / "async.js";
  WriteScript(script,
              "async function loadUser(id) {\n"
              "  await null;\n"
              "  const end = Date.now() + 600;\n"
              "  while (Date.now() < end) {}\n"
              "  return id;\n"
              "}\n"
              "setTimeout(async function main() { await loadUser(1); }, 200);\n");
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {}, &report);
  ExpectJsCulprit(h, "loadUser", script, 1, 4, report);
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) {
      if (f.language == FrameLanguage::kJs) {
        EXPECT_FALSE(f.file.empty()) << report;
      }
    }
  }
}

TEST_F(RunJsFrames, NoJsTurnsThemOff) {
  const std::string script = dir_ / "app.js";
  WriteScript(script, kBusy);
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {"--no-js"}, &report);
  ASSERT_NE(h.dominant(), nullptr);
  for (const Frame& f : h.dominant()->frames) EXPECT_NE(f.language, FrameLanguage::kJs) << report;
  EXPECT_NE(h.culprit.language, FrameLanguage::kJs);
}

TEST_F(RunJsFrames, ReadFileSyncOnAFifoNamesTheReadingFunction) {
  const std::string script = dir_ / "config.js";
  const std::string text =
      "const fs = require('fs');\n"
      "function readConfig(path) {\n"
      "  return fs.readFileSync(path, 'utf8');  // mark: read\n"
      "}\n"
      "setTimeout(function load() { readConfig(process.argv[2]); }, 200);\n";
  WriteScript(script, text);
  const std::string fifo = dir_ / "config.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The writer: opens the FIFO once node opened it to read (bounded: 20 s), then writes 1.5 s
  // later.
  std::thread writer([&] {
    int fd = -1;
    for (int i = 0; i < 2000 && fd < 0; ++i) {
      fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO while nobody reads
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fd < 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the stall itself
    (void)!write(fd, "{}\n", 3);
    close(fd);
  });
  std::string report;
  const HangRecord h = RunNode(dir_, script, {fifo}, {}, &report);
  writer.join();
  EXPECT_GE(h.duration_ms, 1000u);
  ExpectJsCulprit(h, "readConfig", script, 2, LineOf(text, "mark: read"), report);
}

TEST_F(RunJsFrames, Pbkdf2SyncNamesTheHashingFunction) {
  const std::string script = dir_ / "hash.js";
  WriteScript(script,
              "const crypto = require('crypto');\n"
              "function hashPassword(pw) {\n"
              "  return crypto.pbkdf2Sync(pw, 'salt', 1500000, 64, 'sha512');\n"
              "}\n"
              "setTimeout(function login() { hashPassword('secret'); }, 200);\n");
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {}, &report);
  EXPECT_GE(h.duration_ms, 500u);
  ExpectJsCulprit(h, "hashPassword", script, 2, 3, report);
}

// child_process.execSync runs a private libuv loop on the main thread until the child ends:
// its epoll_wait is made from the loop's own call site (uv__io_poll), deeper, on another epoll
// instance, which the shim takes for work of the pass (integrations/preload/loop_wait_sites.h).
TEST_F(RunJsFrames, ExecSyncNamesTheFunctionWaitingForTheChild) {
  const std::string script = dir_ / "exec.js";
  WriteScript(script,
              "const child_process = require('child_process');\n"
              "function runMigration() {\n"
              "  child_process.execSync('sleep 1.5');\n"
              "}\n"
              "setTimeout(function start() { runMigration(); }, 200);\n");
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {}, &report);
  EXPECT_GE(h.duration_ms, 1000u);
  ExpectJsCulprit(h, "runMigration", script, 2, 3, report);
}

// The same in a worker_threads Worker watched under --threads loops: its private loop is work of
// the worker's pass too (before: the worker's shim path ignored the epoll instance, 2 s idle).
TEST_F(RunJsFrames, ExecSyncInAWatchedWorkerThreadIsItsHang) {
  const std::string script = dir_ / "worker_exec.js";
  WriteScript(script,
              "const { Worker } = require('worker_threads');\n"
              "const w = new Worker(`\n"
              "const child_process = require('child_process');\n"
              "function migrateInWorker() { child_process.execSync('sleep 1.5'); }\n"
              "let n = 0;\n"
              "const iv = setInterval(() => {\n"
              "  if (++n === 20) migrateInWorker();\n"
              "  if (n === 25) { clearInterval(iv); process.exit(0); }\n"
              "}, 20);\n"
              "`, { eval: true });\n"
              "w.on('exit', () => process.exit(0));\n"
              "setInterval(() => {}, 1000);\n");
  std::string report;
  const HangRecord h = RunNode(dir_, script, {}, {"--threads", "loops"}, &report);
  EXPECT_GE(h.duration_ms, 1000u) << report;
  EXPECT_NE(h.tid, h.pid) << report;  // the worker's thread
  EXPECT_EQ(h.culprit.language, FrameLanguage::kJs) << report;
  EXPECT_EQ(h.culprit.symbol, "migrateInWorker") << report;
}

TEST_F(RunJsFrames, AnHttpHandlerThatStallsIsNamed) {
  const std::string script = dir_ / "server.js";
  const std::string port_file = dir_ / "port";
  const std::string text =
      "const http = require('http');\n"
      "function busy(ms) { const end = Date.now() + ms; while (Date.now() < end) {} }\n"
      "function handleOrder(req, res) {\n"
      "  busy(700);\n"
      "  res.end('ok');\n"
      "  server.close();\n"
      "}\n"
      "const server = http.createServer(handleOrder);\n"
      "server.listen(0, '127.0.0.1', () => {\n"
      "  require('fs').writeFileSync(process.argv[2], String(server.address().port));\n"
      "});\n";
  WriteScript(script, text);
  std::thread client([&] {
    // Waits for the server's port (written once it listens), bounded.
    for (int i = 0; i < 1000; ++i) {
      const std::string port = ReadFile(port_file);
      if (!port.empty()) {
        LoopbackGet(std::stoi(port), "/order");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::string report;
  const HangRecord h = RunNode(dir_, script, {port_file}, {}, &report);
  client.join();
  EXPECT_GE(h.duration_ms, 500u);
  // The culprit is the innermost JS function (busy); the handler is in the same stack.
  ExpectJsCulprit(h, "busy", script, 2, 2, report);
  bool handler = false;
  ASSERT_NE(h.dominant(), nullptr);
  for (const Frame& f : h.dominant()->frames) {
    handler |= f.language == FrameLanguage::kJs && f.symbol == "handleOrder" && f.file == script &&
               f.line == (f.line_is_definition ? 3 : LineOf(text, "busy(700)"));
  }
  EXPECT_TRUE(handler) << report;
}

}  // namespace
}  // namespace hangwatch::testing
