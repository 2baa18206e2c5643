// `hangwatch run` on real launchers from Debian: npm, whose own event loop arms before the server
// it starts through `sh -c` (the runner problem: the server must be watched by default, and
// named as unwatched under --no-inherit; npm is a wrapper: the program is what its script runs,
// and --fail-on-hang exits 4 when that was not watched), and a tmux server, whose pane process
// executes its command after tmux forked it (it must be listed under its own name, not as tmux).
// Names come from the kernel (/proc/PID/comm) or argv[0] at load: npm renames its node process
// `npm`. A Go program built with cgo loads the shim but waits without libc: it is never armed (a C
// wait of its main thread must not turn the rest of its run into a made-up fatal hang), and
// `run` says why it was not watched.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "cli_util.h"
#include "tools/run/run_dir.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;
constexpr char kNpm[] = "/usr/bin/npm";
constexpr char kNode[] = "/usr/bin/node";
constexpr char kTmux[] = "/usr/bin/tmux";

// A package whose start script runs `node server.js`: a server that stalls its loop for 1 s in
// a timer, then closes and exits. Its prestart hook makes npm wait (in its event loop) before it
// starts the server: without it, whether npm's first wait comes before or after it forks the
// server's shell is a race in npm, and so is whether --no-inherit passes the shim to it.
void WritePackage(const TempDir& dir) {
  WriteFile(dir / "package.json",
            "{\"name\": \"stall-server\", \"version\": \"1.0.0\", \"private\": true,\n"
            " \"scripts\": {\"prestart\": \"true\", \"start\": \"node server.js\"}}\n");
  WriteFile(dir / "server.js",
            "const http = require('http');\n"
            "const server = http.createServer((q, r) => r.end('ok')).listen(0, () => {\n"
            "  setTimeout(() => { const t = Date.now(); while (Date.now() - t < 1000) {} }, 100);\n"
            "  setTimeout(() => server.close(), 1300);\n"
            "});\n");
}

// npm started in `dir`, offline and without writing to the user's home.
std::vector<std::string> NpmStart(const TempDir& dir, std::vector<std::string> run_args) {
  run_args.insert(run_args.begin(), {kCli, "run"});
  run_args.insert(run_args.end(), {"--", kNpm, "--prefix", dir.path(), "start"});
  return run_args;
}

std::vector<std::string> NpmEnv(const TempDir& dir) {
  return {"HOME=" + dir.path(), "npm_config_update_notifier=false", "npm_config_offline=true",
          "npm_config_cache=" + dir.path() + "/cache"};
}

TEST(RunRealLaunch, NpmStartWatchesTheServerItStartsAndNamesNpmAndNode) {
  if (access(kNpm, X_OK) != 0 || access(kNode, X_OK) != 0) GTEST_SKIP() << "npm or node missing";
  TempDir dir;
  WritePackage(dir);
  const auto r = RunCommand(NpmStart(dir, {"--threshold-ms", "250"}), NpmEnv(dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The stall is found in the server, which npm started through sh -c.
  EXPECT_TRUE(Has(r.err, "hangwatch run: 1 hang in /usr/bin/npm")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("hangwatch run:   pid [0-9]+ node "
                                                  "\\(/usr/bin/node[^)]*\\): 1 hang")))
      << r.err;
  // npm's own node process, which renamed itself, is listed as npm: a helper of the server.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("hangwatch run:   pid [0-9]+ npm[^(]* "
                                                  "\\(/usr/bin/node[^)]*\\): no hangs, a "
                                                  "helper, not the program\n")))
      << r.err;
  EXPECT_FALSE(Has(r.err, "not watched")) << r.err;
  EXPECT_FALSE(Has(r.err, "without hangwatch")) << r.err;

  // --no-inherit: npm armed first, so the start script's shell ran without the shim: the
  // program was not watched (npm's own process is a helper), and the first line says so.
  const auto no = RunCommand(NpmStart(dir, {"--threshold-ms", "250", "--no-inherit"}), NpmEnv(dir));
  EXPECT_EQ(no.exit_code, 0) << no.err;
  EXPECT_TRUE(std::regex_search(
      no.err, std::regex("^hangwatch run: the program was not watched: sh \\(run by npm\\) was not "
                         "watched: npm[^\n]* executed sh without the shim \\(the launch rule: "
                         "--no-inherit\\)\n")))
      << no.err;
  EXPECT_TRUE(Has(no.err, "hangwatch run: no hangs in the helpers of /usr/bin/npm")) << no.err;
  EXPECT_TRUE(std::regex_search(
      no.err, std::regex("hangwatch run: npm[^\n]* executed `sh -c node server.js` without "
                         "hangwatch; it was not watched \\(the launch rule: --no-inherit\\)\n")))
      << no.err;
}

// A package in `dir` whose start script is `script` (no prestart: npm runs nothing else).
void WriteStartScript(const TempDir& dir, const std::string& script) {
  WriteFile(dir / "package.json",
            "{\"name\": \"start-script\", \"version\": \"1.0.0\", \"private\": true,\n"
            " \"scripts\": {\"start\": \"" +
                script + "\"}}\n");
}

// npm is a wrapper: its own loop arms, but the program is what its start script runs. A script
// whose program never waits for events fails --fail-on-hang with 4 and is named; npm's process
// is listed as a helper.
TEST(RunRealLaunch, NpmStartScriptThatIsNotWatchedIsTheProgramNotNpm) {
  if (access(kNpm, X_OK) != 0 || access(kNode, X_OK) != 0) GTEST_SKIP() << "npm or node missing";
  TempDir dir;
  WriteStartScript(dir, "sleep 0.3");
  const auto r = RunCommand(NpmStart(dir, {"--fail-on-hang"}), NpmEnv(dir));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.err.rfind("hangwatch run: the program was not watched: sleep (run by npm) never "
                        "waited for events\n",
                        0),
            0u)
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("hangwatch run:   pid [0-9]+ npm[^(]* "
                                                  "\\(/usr/bin/node[^)]*\\): no hangs, a helper, "
                                                  "not the program")))
      << r.err;
}

// The rule's other side: a start script whose program is an event loop (node waiting on a timer)
// is watched, so npm passes.
TEST(RunRealLaunch, NpmStartScriptThatIsWatchedPasses) {
  if (access(kNpm, X_OK) != 0 || access(kNode, X_OK) != 0) GTEST_SKIP() << "npm or node missing";
  TempDir dir;
  WriteStartScript(dir, "node -e 'setTimeout(() => {}, 200)'");
  const auto r = RunCommand(NpmStart(dir, {"--fail-on-hang"}), NpmEnv(dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Has(r.err, "not watched")) << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch run: no hangs in /usr/bin/npm")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("hangwatch run:   pid [0-9]+ node "
                                                  "\\(/usr/bin/node[^)]*\\): no hangs\n")))
      << r.err;
}

// Runs tmux with its own socket, configuration and shell; at the end, kills its server (which
// ends the pane) and removes the run directory `run` kept for them once they are gone.
class TmuxServer {
 public:
  TmuxServer() : socket_(dir_ / "sock") {}
  ~TmuxServer() {
    RunCommand({kTmux, "-S", socket_, "kill-server"});
    std::smatch m;
    if (!std::regex_search(err_, m, std::regex("(/tmp/hangwatch-run\\.[A-Za-z0-9]{6}) is kept"))) {
      return;
    }
    const std::string run_dir = m.str(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (access(run_dir.c_str(), F_OK) == 0 && std::chrono::steady_clock::now() < deadline) {
      tools::RemoveStaleRunDirs("/tmp");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_NE(access(run_dir.c_str(), F_OK), 0) << "tmux or its pane still runs";
  }
  // `hangwatch run [run_args] -- tmux new-session -d 'exec sleep 30'`.
  CommandResult Start(std::vector<std::string> run_args) {
    run_args.insert(run_args.begin(), {kCli, "run", "--startup-ms", "1000"});
    run_args.insert(run_args.end(), {"--", "/usr/bin/env", "-u", "TMUX", kTmux, "-f", "/dev/null",
                                     "-S", socket_, "new-session", "-d", "exec sleep 30"});
    const auto r = RunCommand(run_args, {"HOME=" + dir_.path(), "SHELL=/bin/sh"});
    err_ = r.err;
    return r;
  }

 private:
  TempDir dir_;
  std::string socket_;
  std::string err_;
};

TEST(RunRealLaunch, ProcessForkedByATmuxServerIsNamedAfterWhatItExecuted) {
  if (access(kTmux, X_OK) != 0) GTEST_SKIP() << "tmux missing";
  // Default: the pane's sleep loaded the shim, and is listed as sleep (never waiting).
  {
    TmuxServer tmux;
    const auto r = tmux.Start({});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Has(r.err, "hangwatch run: still running after /usr/bin/env ended: ")) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("pid [0-9]+ sleep \\(not waiting for "
                                                    "events yet\\)")))
        << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex("pid [0-9]+ tmux[^,\n]* \\(not"))) << r.err;
  }
  // --no-inherit: the pane ran without the shim; its process is still named sleep (the
  // kernel's name of a process that executed a program after its last line in the log).
  TmuxServer tmux;
  const auto r = tmux.Start({"--no-inherit"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("pid [0-9]+ sleep \\(not watched\\)"))) << r.err;
  EXPECT_FALSE(std::regex_search(r.err, std::regex("pid [0-9]+ tmux[^,\n]* \\(not"))) << r.err;
  EXPECT_TRUE(Has(r.err, " executed `sh -c exec sleep 30` without hangwatch; it was not watched"))
      << r.err;
}

constexpr char kGo[] = "/usr/bin/go";

// A cgo program whose main thread (the main goroutine, locked to it) waits once in C's poll, as
// getaddrinfo or libcurl would, then works and idles in Go for 1.2 s and leaves with os.Exit (a raw
// exit_group). Built by `go build` from the standard library only, offline, its caches in `dir`:
// Debian's Go ships the standard library compiled, so this takes about a second.
std::string BuildGoProgram(const TempDir& dir) {
  WriteFile(dir / "go.mod", "module gowait\n\ngo 1.19\n");
  WriteFile(dir / "main.go",
            "package main\n\n"
            "/*\n#include <poll.h>\nstatic void wait_once(void) { poll(0, 0, 50); }\n*/\n"
            "import \"C\"\n\n"
            "import (\n\t\"os\"\n\t\"runtime\"\n\t\"time\"\n)\n\n"
            "func init() { runtime.LockOSThread() }\n\n"
            "var sink int\n\n"
            "func busyFor(d time.Duration) {\n"
            "\tfor end := time.Now().Add(d); time.Now().Before(end); {\n"
            "\t\tfor i := 0; i < 100000; i++ {\n\t\t\tsink += i\n\t\t}\n\t}\n}\n\n"
            "func main() {\n\tC.wait_once()\n\tbusyFor(600 * time.Millisecond)\n"
            "\ttime.Sleep(600 * time.Millisecond)\n\tos.Exit(0)\n}\n");
  const auto built = RunCommand(
      {"/bin/sh", "-c", "cd \"$0\" && exec " + std::string(kGo) + " build -o gowait .", dir.path()},
      {"GOCACHE=" + dir / "gocache", "GOPATH=" + dir / "gopath", "HOME=" + dir.path(),
       "GOFLAGS=-mod=mod", "GOPROXY=off", "CGO_ENABLED=1", "GOTOOLCHAIN=local"});
  EXPECT_EQ(built.exit_code, 0) << built.out << built.err;
  return dir / "gowait";
}

TEST(RunRealLaunch, GoProgramIsNotArmedByACWaitAndRunSaysWhy) {
  if (access(kGo, X_OK) != 0) GTEST_SKIP() << "go missing";
  TempDir dir;
  const std::string program = BuildGoProgram(dir);
  ASSERT_EQ(access(program.c_str(), X_OK), 0);
  const auto r = RunCommand({kCli, "run", "--threshold-ms", "250", "--fail-on-hang", "--report",
                             dir / "hangs.jsonl", "--", program},
                            {"HANGWATCH_CACHE_DIR=" + dir / "cache"});
  EXPECT_EQ(r.exit_code, 4) << "nothing was watched: " << r.err;
  EXPECT_FALSE(Has(r.err, "FATAL")) << r.err;
  EXPECT_FALSE(Has(r.err, " hang in ")) << r.err;
  EXPECT_TRUE(Has(r.err,
                  "hangwatch run: no process was watched: gowait could not be watched: a "
                  "Go program: "))
      << r.err;
  EXPECT_TRUE(Has(r.err, "not through libc")) << r.err;
}

}  // namespace
}  // namespace hangwatch::testing
