// Debug info from a real debuginfod server (elfutils' `debuginfod -F DIR`, Debian package
// debuginfod) on loopback: a stripped stall_program runs under `hangwatch run`; `hangwatch report`
// names the culprit with its file:line only when DEBUGINFOD_URLS points at the server that holds
// its .debug file; `hangwatch top`, `hangwatch symbolize --build-id` and `hangwatch snapshot PID`
// do too. A slow
// server shows progress after a second; a server that never answers is given up after
// DEBUGINFOD_TIMEOUT. (real_component: a real server from Debian; run once, not under the
// sanitizers.)
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

const std::string kCli = HANGWATCH_CLI;

// A free loopback port (bound, then released for the server to take).
int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// The HTTP status of GET path on 127.0.0.1:port; 0 when nothing answers.
int HttpStatus(int port, const std::string& path) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  int status = 0;
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(s, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      pollfd p = {s, POLLIN, 0};
      if (poll(&p, 1, 10000) > 0 && read(s, buf, sizeof buf - 1) > 12) {
        status = std::atoi(buf + 9);  // "HTTP/1.1 200"
      }
    }
  }
  close(s);
  return status;
}

// A server process, killed and reaped on destruction.
class Server {
 public:
  explicit Server(std::vector<std::string> argv) {
    pid_ = fork();
    if (pid_ == 0) {
      const int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      execvp(a[0], a.data());
      _exit(127);
    }
  }
  ~Server() {
    kill(pid_, SIGTERM);
    int status;
    waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

class DebuginfodReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    report_ = *dir_ / "hangs.jsonl";
    const auto r = RunCommand({kCli, "run", "--threshold-ms", "100", "--sample-ms", "10",
                               "--report", report_, "--", STRIPPED_STALL_PROGRAM, "0", "600"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    tools::Report report;
    std::string error;
    ASSERT_TRUE(tools::ReadReportFile(report_, &report, &error)) << error;
    ASSERT_EQ(report.hangs.size(), 1u);
    const Culprit& c = report.hangs[0].culprit;
    // Stripped: the agent could not name it.
    ASSERT_EQ(c.symbol, "");
    build_id_ = report.hangs[0].dominant()->frames[static_cast<size_t>(c.frame)].build_id;
    offset_ = c.offset;
    ASSERT_EQ(build_id_.size(), 40u);
  }
  static void TearDownTestSuite() { delete dir_; }

  // `hangwatch report` with its own caches (hangwatch's index cache would remember DWARF
  // fetched before) and DEBUGINFOD_URLS as given ("" is unset).
  CommandResult Report(const std::string& urls, std::vector<std::string> env = {}) {
    return Hangwatch({"report"}, urls, "", std::move(env));
  }
  // `hangwatch top` (with `args`), with caches of its own (prefix "top-"): nothing that
  // `report` fetched helps it.
  CommandResult Top(const std::string& urls, std::vector<std::string> args = {}) {
    args.insert(args.begin(), "top");
    return Hangwatch(args, urls, "top-", {});
  }
  CommandResult Hangwatch(std::vector<std::string> args, const std::string& urls,
                          const std::string& cache_prefix, std::vector<std::string> env) {
    env.push_back("DEBUGINFOD_URLS=" + urls);
    env.push_back("HANGWATCH_CACHE_DIR=" + tmp_ / (cache_prefix + "hwcache"));
    env.push_back("DEBUGINFOD_CACHE_PATH=" + tmp_ / (cache_prefix + "debuginfod-cache"));
    args.insert(args.begin(), kCli);
    args.insert(args.end(), {"--debug-dir", tmp_ / "no-debug-dir", report_});
    return RunCommand(args, env);
  }

  static TempDir* dir_;
  static std::string report_, build_id_;
  static uint64_t offset_;
  TempDir tmp_;
};
TempDir* DebuginfodReport::dir_ = nullptr;
std::string DebuginfodReport::report_, DebuginfodReport::build_id_;
uint64_t DebuginfodReport::offset_ = 0;

TEST_F(DebuginfodReport, CulpritGetsFileAndLineOnlyFromTheServer) {
  const auto without = Report("");
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_FALSE(Has(without.out, "stall_program.cc:")) << without.out;
  EXPECT_FALSE(Has(without.out, "StallTheMainThread")) << without.out;
  const auto top_without = Top("");
  ASSERT_EQ(top_without.exit_code, 0) << top_without.err;
  EXPECT_TRUE(Has(top_without.out, "1 hang in 1 group")) << top_without.out;
  EXPECT_TRUE(Has(top_without.out, "stall_program+0x")) << top_without.out;
  EXPECT_FALSE(Has(top_without.out, "stall_program.cc:")) << top_without.out;
  EXPECT_FALSE(Has(top_without.out, "StallTheMainThread")) << top_without.out;

  const int port = FreePort();
  Server server({"debuginfod", "-F", STRIPPED_DEBUG_DIR, "-p", std::to_string(port), "-d",
                 tmp_ / "debuginfod.sqlite", "-L"});
  // Ready when it serves the file (its first scan of the directory is done), within a minute.
  const std::string path = "/buildid/" + build_id_ + "/debuginfo";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  while ((status = HttpStatus(port, path)) != 200 && std::chrono::steady_clock::now() < deadline) {
    poll(nullptr, 0, 100);
  }
  ASSERT_EQ(status, 200) << "debuginfod did not serve " << path;

  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const auto with = Report(url);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_TRUE(Has(with.out, "StallTheMainThread")) << with.out;
  EXPECT_TRUE(Has(with.out, "stall_program.cc:")) << with.out;
  // Fetched into libdebuginfod's cache ($DEBUGINFOD_CACHE_PATH).
  EXPECT_TRUE(Has(ReadFile(tmp_ / "debuginfod-cache/" + build_id_ + "/debuginfo"), "ELF"));

  // `hangwatch top` names the group's culprit as report does, from its own download.
  const auto top = Top(url);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_TRUE(Has(top.out, "StallTheMainThread (stall_program.cc:")) << top.out;
  EXPECT_TRUE(Has(ReadFile(tmp_ / "top-debuginfod-cache/" + build_id_ + "/debuginfo"), "ELF"));
  const auto top_json = Top(url, {"--format", "json"});
  ASSERT_EQ(top_json.exit_code, 0) << top_json.err;
  const auto culprit = nlohmann::json::parse(top_json.out).at(0)["culprit"];
  EXPECT_EQ(culprit["symbol"], "StallTheMainThread") << top_json.out;
  EXPECT_TRUE(Has(culprit["file"].get<std::string>(), "stall_program.cc")) << top_json.out;
  EXPECT_GT(culprit["line"].get<int>(), 0) << top_json.out;

  // `hangwatch symbolize` through the same chain.
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(offset_));
  const auto sym = RunCommand(
      {kCli, "symbolize", "--build-id", build_id_, "--debug-dir", tmp_ / "no-debug-dir", addr},
      {"DEBUGINFOD_URLS=" + url, "HANGWATCH_CACHE_DIR=" + tmp_ / "hwcache2",
       "DEBUGINFOD_CACHE_PATH=" + tmp_ / "debuginfod-cache2"});
  EXPECT_EQ(sym.exit_code, 0) << sym.err;
  EXPECT_TRUE(Has(sym.out, "StallTheMainThread\n")) << sym.out;
  EXPECT_TRUE(Has(sym.out, "stall_program.cc:")) << sym.out;

  // `hangwatch snapshot` of the stripped program while it runs: its main() and the stall get
  // their source lines from the server only.
  Server program({STRIPPED_STALL_PROGRAM, "0", "60000"});
  const std::string exe = "/proc/" + std::to_string(program.pid()) + "/exe";
  char target[4096];
  for (int i = 0; i < 600; ++i) {  // until the child has exec'ed the program
    const ssize_t n = readlink(exe.c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == STRIPPED_STALL_PROGRAM) break;
    poll(nullptr, 0, 10);
  }
  auto snapshot = [&](const std::string& urls, const std::string& cache) {
    return RunCommand({kCli, "snapshot", std::to_string(program.pid())},
                      {"DEBUGINFOD_URLS=" + urls, "HANGWATCH_CACHE_DIR=" + tmp_ / cache,
                       "DEBUGINFOD_CACHE_PATH=" + tmp_ / (cache + "-debuginfod")});
  };
  const auto bare = snapshot("", "snap1");
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_FALSE(Has(bare.out, "stall_program.cc:")) << bare.out;
  const auto named = snapshot(url, "snap2");
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(Has(named.out, "stall_program.cc:")) << named.out;
}

// A debuginfod stand-in that trickles the .debug file over about 2.5 s ("slow"), or accepts and
// never answers ("mute").
constexpr char kSlowServer[] = R"(
import http.server, sys, time
mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = open(path, 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if mode == 'mute':
            time.sleep(600)
            return
        self.send_response(200)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        step = len(data) // 10 + 1
        for i in range(0, len(data), step):
            self.wfile.write(data[i:i + step])
            self.wfile.flush()
            time.sleep(0.25)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', port), H).serve_forever()
)";

void WaitForPort(int port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool up = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(s);
    if (up) return;
    poll(nullptr, 0, 50);
  }
}

TEST_F(DebuginfodReport, ASlowDownloadShowsProgress) {
  const int port = FreePort();
  Server server({"python3", "-c", kSlowServer, "slow", std::to_string(port),
                 std::string(STRIPPED_DEBUG_DIR) + "/stall_program.debug"});
  WaitForPort(port);
  const auto r = Report("http://127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      Has(r.err, "hangwatch: downloading debug info " + build_id_ + " from http://127.0.0.1:"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "hangwatch: debug info " + build_id_ + " downloaded")) << r.err;
  EXPECT_TRUE(Has(r.out, "stall_program.cc:")) << r.out;

  // The same progress from `hangwatch top`.
  const auto top = Top("http://127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_TRUE(Has(top.err, "hangwatch: downloading debug info " + build_id_)) << top.err;
  EXPECT_TRUE(Has(top.out, "StallTheMainThread (stall_program.cc:")) << top.out;

  // A server URL with credentials: the progress line names the server, not the password.
  const auto creds =
      Hangwatch({"report"}, "http://robot:s3cret@127.0.0.1:" + std::to_string(port), "creds-", {});
  ASSERT_EQ(creds.exit_code, 0) << creds.err;
  EXPECT_TRUE(Has(creds.err,
                  "hangwatch: downloading debug info " + build_id_ + " from http://***@127.0.0.1:"))
      << creds.err;
  EXPECT_FALSE(Has(creds.err, "s3cret")) << creds.err;
}

TEST_F(DebuginfodReport, AServerThatNeverAnswersIsGivenUpAfterTheTimeout) {
  const int port = FreePort();
  Server server({"python3", "-c", kSlowServer, "mute", std::to_string(port),
                 std::string(STRIPPED_DEBUG_DIR) + "/stall_program.debug"});
  WaitForPort(port);
  const auto start = std::chrono::steady_clock::now();
  const auto r = Report("http://127.0.0.1:" + std::to_string(port),
                        {"DEBUGINFOD_TIMEOUT=1", "DEBUGINFOD_RETRY_LIMIT=1"});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, std::chrono::seconds(60));  // not the server's 600 s
  EXPECT_TRUE(Has(r.err, "hangwatch: debuginfod: no debug info for " + build_id_)) << r.err;
  EXPECT_FALSE(Has(r.out, "stall_program.cc:")) << r.out;
}

}  // namespace
}  // namespace hangwatch::testing
