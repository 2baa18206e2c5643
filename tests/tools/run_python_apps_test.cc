// `hangwatch run` on real Python applications from Debian's packages, on /usr/bin/python3.11
// (real_component), each started by the test: the hang's culprit is the
// application's own Python function, file and line.
//   - gunicorn with two sync workers forked from its master: each worker is watched under its
//     own pid, and each busy route's hang is named by that route's function; so is a worker
//     forked later by the master while its agent captured it (the master's Python capture
//     hook installed, watching the master's thread);
//   - a GTK timeout callback through PyGObject under a private Xvfb: the hang is named by the
//     callback, with GLib's dispatch and the script's `Gtk.main()` line below it.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integrations/child_process.h"
#include "tests/integrations/xvfb_server.h"
#include "tests/tools/gunicorn_server.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kPython[] = "/usr/bin/python3.11";

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// The lines of `def NAME` in `program` and of its body (the lines indented under it): the
// first and the last, {0, 0} when it is not there.
std::pair<int, int> FunctionLines(const std::string& program, const std::string& name) {
  std::istringstream in(program);
  std::string line;
  int first = 0, last = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    if (first == 0) {
      if (line.rfind("def " + name + "(", 0) == 0) first = last = n;
    } else if (!line.empty() && line[0] == ' ') {
      last = n;
    } else {
      break;
    }
  }
  return {first, last};
}

// The line of `program` that holds `text`, 0 when none.
int LineOf(const std::string& program, const std::string& text) {
  std::istringstream in(program);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

tools::Report ReadReport(const std::string& path) {
  tools::Report report;
  std::string error;
  EXPECT_TRUE(tools::ParseJsonLines(ReadFile(path), &report, &error)) << error;
  return report;
}

// The hang whose culprit is the Python function `symbol`, nullptr when none (more than one
// fails the test).
const HangRecord* HangNamed(const tools::Report& report, const std::string& symbol) {
  const HangRecord* found = nullptr;
  for (const HangRecord& h : report.hangs) {
    if (h.culprit.symbol != symbol) continue;
    EXPECT_EQ(found, nullptr) << "two hangs named " << symbol;
    found = &h;
  }
  return found;
}

// Index of the first frame of `s` from `from` on of that language and symbol, -1 when none.
int FindFrame(const Stack& s, FrameLanguage language, const std::string& symbol, size_t from = 0) {
  for (size_t i = from; i < s.frames.size(); ++i) {
    if (s.frames[i].language == language && s.frames[i].symbol == symbol) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The culprit is the Python function `symbol` of `file`, at a line of its body `lines`.
void ExpectPythonCulprit(const HangRecord& h, const std::string& symbol, const std::string& file,
                         std::pair<int, int> lines) {
  EXPECT_EQ(h.culprit.language, FrameLanguage::kPython);
  EXPECT_EQ(h.culprit.symbol, symbol);
  EXPECT_EQ(h.culprit.file, file);
  EXPECT_GT(h.culprit.line, lines.first) << "a line of " << symbol << "'s body";
  EXPECT_LE(h.culprit.line, lines.second) << "a line of " << symbol << "'s body";
}

// Waits (up to 30 s) until `report` holds a hang named by each of `symbols`: the hang is
// written when its pass ends at the loop's next wait. A process stopped before that would end
// the pass by exiting, which makes it a shutdown-phase hang.
bool WaitForHangs(const std::string& report, const std::vector<std::string>& symbols) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    tools::Report parsed;
    std::string error;
    size_t found = 0;
    if (tools::ParseJsonLines(ReadFile(report), &parsed, &error)) {
      for (const std::string& symbol : symbols) {
        for (const HangRecord& h : parsed.hangs) {
          if (h.culprit.symbol == symbol) {
            ++found;
            break;
          }
        }
      }
    }
    if (found == symbols.size()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The text of `hangwatch report FILE`.
std::string ReportText(const TempDir& dir, const std::string& report) {
  const std::string text = dir.path() + "/report.txt";
  ChildProcess reader({kCli, "report", report, "-o", text}, {});
  EXPECT_EQ(reader.WaitAtMost(std::chrono::seconds(60)), 0) << "hangwatch report " << report;
  return ReadFile(text);
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Two routes, each busy for 600 ms in a function of its own; every answer names the worker
// that gave it. Each worker imports the app after gunicorn forked it (no --preload) and says so
// with its pid and its master's.
constexpr char kWsgiApp[] = R"(import os, time

def busy_a(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n

def busy_b(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n

def app(environ, start_response):
    route = environ.get("PATH_INFO", "")
    if route == "/a":
        busy_a(0.6)
    elif route == "/b":
        busy_b(0.6)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [("worker %d\n" % os.getpid()).encode()]

print("worker", os.getpid(), os.getppid(), flush=True)
)";

// The pid in an answer's "worker PID" body, 0 when there is none.
pid_t AnsweredBy(const std::string& answer) {
  const size_t at = answer.rfind("\r\n\r\nworker ");
  return at == std::string::npos ? 0 : std::atoi(answer.c_str() + at + 11);
}

// The next worker's boot line ("worker PID MASTER"): its pid, 0 when none came within 30 s.
pid_t BootedWorker(GunicornServer& server, pid_t* master) {
  std::string line;
  int pid = 0, parent = 0;
  if (!server.child.ReadLine(&line, std::chrono::seconds(30)) ||
      std::sscanf(line.c_str(), "worker %d %d", &pid, &parent) != 2) {
    ADD_FAILURE() << "no worker booted: " << line;
    return 0;
  }
  *master = parent;
  return pid;
}

// The hang of the route whose function is `symbol`, answered by `worker`: in `parsed` and in
// `text` (hangwatch report's), from that worker, named by that function.
void ExpectRouteHang(const tools::Report& parsed, const std::string& text,
                     const std::string& symbol, pid_t worker, pid_t master,
                     const std::string& app) {
  SCOPED_TRACE(symbol);
  const HangRecord* h = HangNamed(parsed, symbol);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->pid, worker) << "the worker that answered, watched under its own pid";
  EXPECT_NE(h->pid, master);
  EXPECT_GE(h->duration_ms, 300u);
  EXPECT_EQ(h->phase, HangPhase::kRun);
  ExpectPythonCulprit(*h, symbol, app, FunctionLines(kWsgiApp, symbol));
  // The culprit's stack: the route's function called by the WSGI callable, called by the
  // sync worker's request handler (gunicorn's own Python frames).
  ASSERT_LT(static_cast<size_t>(h->culprit.stack), h->stacks.size());
  const Stack& s = h->stacks[static_cast<size_t>(h->culprit.stack)];
  const int route = FindFrame(s, FrameLanguage::kPython, symbol);
  ASSERT_GE(route, 0);
  const int wsgi = FindFrame(s, FrameLanguage::kPython, "app", static_cast<size_t>(route));
  ASSERT_GT(wsgi, route);
  EXPECT_EQ(s.frames[static_cast<size_t>(wsgi)].file, app);
  EXPECT_EQ(s.frames[static_cast<size_t>(wsgi)].line,
            LineOf(kWsgiApp, "        " + symbol + "(0.6)"));
  EXPECT_GT(FindFrame(s, FrameLanguage::kPython, "SyncWorker.handle_request"), wsgi);
  // `hangwatch report`'s text names it the same way, in that worker.
  EXPECT_TRUE(Has(text, "Process:          /usr/bin/python3.11 [" + std::to_string(worker)))
      << text;
  EXPECT_TRUE(Has(text, "Culprit:          " + symbol + " (" + app + ":" +
                            std::to_string(h->culprit.line) + ")"))
      << text;
}

// `hangwatch run --threshold-ms 300 --report REPORT --`.
std::vector<std::string> RunLauncher(const std::string& report) {
  return {kCli, "run", "--threshold-ms", "300", "--report", report, "--"};
}

bool HaveGunicorn() { return access(kPython, X_OK) == 0 && access(kGunicorn, R_OK) == 0; }

TEST(RunPythonApps, GunicornSyncWorkersHangsAreNamedByEachRoutesFunction) {
  if (!HaveGunicorn()) GTEST_SKIP() << "needs Debian's python3.11 and gunicorn";
  TempDir dir;
  const std::string app = dir.path() + "/app.py";
  WriteText(app, kWsgiApp);
  const std::string report = dir.path() + "/hangs.jsonl";
  GunicornServer server(dir.path(), RunLauncher(report), {}, {"--workers", "2"}, "app:app");

  // Both workers booted (each printed its line), then armed: a sync worker may handle a
  // request it accepted before its first wait, which no agent would watch.
  pid_t master = 0;
  const std::set<pid_t> workers = {BootedWorker(server, &master), BootedWorker(server, &master)};
  ASSERT_EQ(workers.size(), 2u);
  for (const pid_t w : workers) ASSERT_TRUE(w != 0 && Armed(w)) << "worker " << w << " never armed";

  // Both at once: while one worker spins in /a, the other takes /b (or the first, after).
  const int a = SendRequest(server.socket, "/a");
  const int b = SendRequest(server.socket, "/b");
  ASSERT_GE(a, 0) << "gunicorn never answered";
  ASSERT_GE(b, 0) << "gunicorn never answered";
  const pid_t by_a = AnsweredBy(ReadAnswer(a));
  const pid_t by_b = AnsweredBy(ReadAnswer(b));
  EXPECT_EQ(workers.count(by_a), 1u) << by_a;
  EXPECT_EQ(workers.count(by_b), 1u) << by_b;
  EXPECT_TRUE(WaitForHangs(report, {"busy_a", "busy_b"})) << ReadFile(report);
  EXPECT_EQ(server.Stop(), 0) << "gunicorn's exit after SIGTERM";

  const tools::Report parsed = ReadReport(report);
  const std::string text = ReportText(dir, report);
  ExpectRouteHang(parsed, text, "busy_a", by_a, master, app);
  ExpectRouteHang(parsed, text, "busy_b", by_b, master, app);
  // The master ran none of the app's code.
  for (const HangRecord& h : parsed.hangs) {
    if (h.pid == master) {
      EXPECT_EQ(h.culprit.file.rfind(dir.path(), 0), std::string::npos) << h.culprit.file;
    }
  }
}

// gunicorn's configuration for the next test: before it forks any worker but the first, the
// master spins for 400 ms in its pre_fork hook, a hang of its own during which its agent
// captures it (its Python capture hook installed, watching the master's main thread).
constexpr char kSlowForkConfig[] = R"(import time

forks = 0

def pre_fork(server, worker):
    global forks
    forks += 1
    if forks > 1:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            pass
)";

// The first workers are forked before the master first waits (and arms); a worker that
// replaces one (--max-requests) is forked by a master whose agent runs and has just captured
// it with the Python capture hook: the worker's own agent finds its own thread state.
TEST(RunPythonApps, GunicornWorkerForkedByAnArmedMasterHasItsOwnPythonFrames) {
  if (!HaveGunicorn()) GTEST_SKIP() << "needs Debian's python3.11 and gunicorn";
  TempDir dir;
  const std::string app = dir.path() + "/app.py";
  WriteText(app, kWsgiApp);
  const std::string config = dir.path() + "/conf.py";
  WriteText(config, kSlowForkConfig);
  const std::string report = dir.path() + "/hangs.jsonl";
  GunicornServer server(dir.path(), RunLauncher(report), {},
                        {"-c", config, "--workers", "1", "--max-requests", "2"}, "app:app");
  pid_t master = 0;
  const pid_t first = BootedWorker(server, &master);
  ASSERT_TRUE(first != 0 && Armed(first)) << "the first worker never armed";
  ASSERT_TRUE(Armed(master)) << "the master never armed";
  // Two quick requests: the first worker's last; the master forks the next one.
  for (int i = 0; i < 2; ++i) {
    const int fd = SendRequest(server.socket, "/");
    ASSERT_GE(fd, 0) << "gunicorn never answered";
    EXPECT_EQ(AnsweredBy(ReadAnswer(fd)), first);
  }
  pid_t parent = 0;
  const pid_t next = BootedWorker(server, &parent);
  ASSERT_NE(next, 0);
  EXPECT_EQ(parent, master);
  ASSERT_TRUE(Armed(next)) << "the next worker never armed";
  const int a = SendRequest(server.socket, "/a");
  ASSERT_GE(a, 0) << "gunicorn never answered";
  EXPECT_EQ(AnsweredBy(ReadAnswer(a)), next);
  EXPECT_TRUE(WaitForHangs(report, {"pre_fork", "busy_a"})) << ReadFile(report);
  EXPECT_EQ(server.Stop(), 0) << "gunicorn's exit after SIGTERM";

  const tools::Report parsed = ReadReport(report);
  // The master's hang before the fork, with its own Python frames.
  const HangRecord* fork = HangNamed(parsed, "pre_fork");
  ASSERT_NE(fork, nullptr) << ReadFile(report);
  EXPECT_EQ(fork->pid, master);
  ExpectPythonCulprit(*fork, "pre_fork", config, FunctionLines(kSlowForkConfig, "pre_fork"));
  ExpectRouteHang(parsed, ReportText(dir, report), "busy_a", next, master, app);
}

// A window and a 100 ms GLib timeout whose Python callback spins for 600 ms once, then leaves
// the quit to a later timeout (so the busy pass ends at a wait of the loop, not at the exit).
constexpr char kGtkScript[] = R"(import time
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk

def on_tick():
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        pass
    GLib.timeout_add(100, Gtk.main_quit)
    return False

window = Gtk.Window(title="hangwatch")
window.show_all()
GLib.timeout_add(100, on_tick)
Gtk.main()
)";

TEST(RunPythonApps, GtkTimeoutCallbackThroughPyGObjectIsNamedByItsPythonFunction) {
  if (access(kPython, X_OK) != 0 ||
      access("/usr/lib/python3/dist-packages/gi/__init__.py", R_OK) != 0) {
    GTEST_SKIP() << "needs Debian's python3.11 and python3-gi";
  }
  if (access(kXvfb, X_OK) != 0) GTEST_SKIP() << "needs Debian's xvfb";
  XvfbServer x;
  ASSERT_TRUE(x.ok()) << "Xvfb did not start";
  TempDir dir;
  const std::string script = dir.path() + "/gtk_tick.py";
  WriteText(script, kGtkScript);
  const std::string report = dir.path() + "/hangs.jsonl";
  ChildProcess run(
      {kCli, "run", "--threshold-ms", "300", "--report", report, "--", kPython, script},
      {"DISPLAY=" + x.display()});
  ASSERT_EQ(run.WaitAtMost(std::chrono::seconds(60)), 0) << "the script's exit";

  const tools::Report parsed = ReadReport(report);
  const HangRecord* h = HangNamed(parsed, "on_tick");
  ASSERT_NE(h, nullptr) << ReadFile(report);
  EXPECT_GE(h->duration_ms, 300u);
  EXPECT_EQ(h->phase, HangPhase::kRun);
  ExpectPythonCulprit(*h, "on_tick", script, FunctionLines(kGtkScript, "on_tick"));
  // Below the callback: GLib's dispatch (native), then the script's Gtk.main() line.
  ASSERT_LT(static_cast<size_t>(h->culprit.stack), h->stacks.size());
  const Stack& s = h->stacks[static_cast<size_t>(h->culprit.stack)];
  const int tick = FindFrame(s, FrameLanguage::kPython, "on_tick");
  ASSERT_GE(tick, 0);
  const int dispatch = FindFrame(s, FrameLanguage::kNative, "g_main_context_dispatch", tick);
  EXPECT_GT(dispatch, tick);
  const int module = FindFrame(s, FrameLanguage::kPython, "<module>", dispatch < 0 ? 0 : dispatch);
  ASSERT_GT(module, dispatch);
  EXPECT_EQ(s.frames[static_cast<size_t>(module)].file, script);
  EXPECT_EQ(s.frames[static_cast<size_t>(module)].line, LineOf(kGtkScript, "Gtk.main()"));
  const std::string text = ReportText(dir, report);
  EXPECT_TRUE(Has(
      text, "Culprit:          on_tick (" + script + ":" + std::to_string(h->culprit.line) + ")"))
      << text;
}

}  // namespace
}  // namespace hangwatch::testing
