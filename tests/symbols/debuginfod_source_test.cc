// The debuginfod link of the debug-file chains: asked only after every local source (and, for a
// binary's DWARF, after the binary itself), once per build-id, its answers verified; and the real
// libdebuginfod asked only when $DEBUGINFOD_URLS names a server: with it unset or empty, neither
// a request is made nor a connection opened (a loopback port counts the connections).
#include "symbols/debuginfod_source.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fixture_util.h"
#include "gtest/gtest.h"
#include "symbols/debug_file_locator.h"
#include "symbols/offline_symbolizer.h"

namespace hangwatch::symbols {
namespace {

using symtest::RunCommand;
using symtest::TempDir;

// Answers from a map, counting the requests.
class CountingClient : public DebuginfodClient {
 public:
  explicit CountingClient(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  absl::StatusOr<std::string> FindDebuginfo(const std::string& build_id) override {
    ++requests;
    auto it = files_.find(build_id);
    if (it == files_.end()) return absl::NotFoundError("no server has it");
    return it->second;
  }
  int requests = 0;

 private:
  std::map<std::string, std::string> files_;
};

class DebuginfodSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::WriteFile(dir_.Join("p.cc"),
                       "int Work(int x) { return x * 3; }\n"
                       "int main(int argc, char**) { return Work(argc); }\n");
    bin_ = dir_.Join("prog");
    Run("g++ -O0 -g -Wl,--build-id -o " + bin_ + " " + dir_.Join("p.cc"));
    build_id_ = RunCommand("readelf -n " + bin_ + " | awk '/Build ID/ {printf \"%s\", $3}'").out;
    ASSERT_EQ(build_id_.size(), 40u);
    Run("mkdir -p " + dir_.Join("dbg/.build-id/") + build_id_.substr(0, 2) + " " +
        dir_.Join("served") + " " + dir_.Join("empty") + " " + dir_.Join("other"));
    by_id_ =
        dir_.Join("dbg/.build-id/") + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug";
    Run("objcopy --only-keep-debug " + bin_ + " " + by_id_);
    served_ = dir_.Join("served/debuginfo");
    Run("cp " + by_id_ + " " + served_);
    stripped_ = dir_.Join("stripped");
    Run("strip --strip-all -o " + stripped_ + " " + bin_);
    work_ = std::stoull(RunCommand("nm " + bin_ + " | awk '/ _Z4Worki$/ {printf \"%s\", $1}'").out,
                        nullptr, 16);
    ASSERT_NE(work_, 0u);
  }
  void Run(const std::string& cmd) {
    auto r = RunCommand(cmd, "", true);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.out;
  }

  TempDir dir_;
  std::string bin_, build_id_, by_id_, served_, stripped_;
  uint64_t work_ = 0;
};

TEST_F(DebuginfodSourceTest, LocalFilesAndTheBinaryItselfComeFirst) {
  auto client =
      std::make_shared<CountingClient>(std::map<std::string, std::string>{{build_id_, served_}});
  auto source = std::make_shared<DebuginfodSource>(client);
  std::vector<std::string> rejected;
  DebugFileLocator with_tree({{dir_.Join("dbg")}, {}, {source}});
  EXPECT_EQ(with_tree.FindDwarf(stripped_, build_id_, &rejected), by_id_);
  EXPECT_EQ(with_tree.FindByBuildId(build_id_, bin_, &rejected), bin_);
  DebugFileLocator empty({{dir_.Join("empty")}, {}, {source}});
  EXPECT_EQ(empty.FindDwarf(bin_, build_id_, &rejected), bin_);  // the binary has DWARF
  EXPECT_EQ(empty.FindByBuildId(build_id_, stripped_, &rejected), stripped_);
  EXPECT_EQ(client->requests, 0);
}

TEST_F(DebuginfodSourceTest, AskedLastAndOncePerBuildId) {
  auto client =
      std::make_shared<CountingClient>(std::map<std::string, std::string>{{build_id_, served_}});
  DebugFileLocator locator(
      {{dir_.Join("empty")}, {}, {std::make_shared<DebuginfodSource>(client)}});
  std::vector<std::string> rejected;
  EXPECT_EQ(locator.FindDwarf(stripped_, build_id_, &rejected), served_);
  EXPECT_EQ(locator.FindSeparateDebugFile(stripped_, build_id_, &rejected), served_);
  EXPECT_EQ(locator.FindByBuildId(build_id_, "/nonexistent/prog", &rejected), served_);
  EXPECT_EQ(client->requests, 1);
  const std::string other = "ab" + build_id_.substr(2);
  EXPECT_EQ(locator.FindByBuildId(other, "/nonexistent/prog", &rejected), "");
  EXPECT_EQ(locator.FindByBuildId(other, "/nonexistent/prog", &rejected), "");
  EXPECT_EQ(client->requests, 2);  // a miss is remembered too
  EXPECT_TRUE(rejected.empty());
}

TEST_F(DebuginfodSourceTest, AnAnswerWithAnotherBuildIdIsRejected) {
  const std::string other = "ab" + build_id_.substr(2);
  auto client =
      std::make_shared<CountingClient>(std::map<std::string, std::string>{{other, served_}});
  DebugFileLocator locator(
      {{dir_.Join("empty")}, {}, {std::make_shared<DebuginfodSource>(client)}});
  std::vector<std::string> rejected;
  EXPECT_EQ(locator.FindByBuildId(other, "", &rejected), "");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("from debuginfod: build-id " + build_id_), std::string::npos)
      << rejected[0];
}

TEST_F(DebuginfodSourceTest, TheSymbolizerGetsFilesAndLinesThroughTheSource) {
  auto client =
      std::make_shared<CountingClient>(std::map<std::string, std::string>{{build_id_, served_}});
  OfflineSymbolizerOptions options;
  options.debug_dirs = {dir_.Join("empty")};
  options.cache_dir = dir_.Join("cache");
  options.remote = std::make_shared<DebuginfodSource>(client);
  OfflineSymbolizer symbolizer(options);
  std::vector<SymbolizedAddress> out;
  const uint64_t addresses[] = {work_};
  ASSERT_TRUE(symbolizer.SymbolizeBuildId(build_id_, stripped_, addresses, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].frames[0].function, "Work(int)");
  EXPECT_EQ(out[0].frames[0].line, 1u);
  EXPECT_EQ(client->requests, 1);
}

// A listening TCP socket on a free loopback port (in *port).
int ListenOnLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(fd, 16);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// A loopback port that accepts and closes connections, counting them.
class CountingPort {
 public:
  CountingPort() {
    fd_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this] {
      for (;;) {
        pollfd p = {fd_, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
          const int c = accept(fd_, nullptr, nullptr);
          if (c >= 0) {
            ++connections;
            close(c);
          }
        }
        if (stop_) return;
      }
    });
  }
  ~CountingPort() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> connections{0};

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(DebuginfodSourceTest, LibdebuginfodIsAskedOnlyWhenDebuginfodUrlsIsSet) {
  CountingPort port;
  setenv("DEBUGINFOD_CACHE_PATH", dir_.Join("debuginfod-cache").c_str(), 1);
  setenv("DEBUGINFOD_TIMEOUT", "5", 1);
  auto symbolize = [&] {
    OfflineSymbolizerOptions options;
    options.debug_dirs = {dir_.Join("empty")};
    options.read_cache = options.write_cache = false;
    OfflineSymbolizer symbolizer(options);
    std::vector<SymbolizedAddress> out;
    const uint64_t addresses[] = {work_};
    (void)symbolizer.SymbolizeBuildId(build_id_, stripped_, addresses, &out);
    return out.empty() ? 0u : out[0].frames[0].line;
  };
  const int before = LibdebuginfodRequestCount();
  unsetenv("DEBUGINFOD_URLS");
  EXPECT_EQ(DebuginfodSourceFromEnvironment(), nullptr);
  EXPECT_EQ(symbolize(), 0u);
  setenv("DEBUGINFOD_URLS", " ", 1);
  EXPECT_EQ(DebuginfodSourceFromEnvironment(), nullptr);
  EXPECT_EQ(symbolize(), 0u);
  EXPECT_EQ(LibdebuginfodRequestCount(), before);
  EXPECT_EQ(port.connections.load(), 0);

  // Set: the library is asked, and connects (the port closes on it: no answer, no line).
  setenv("DEBUGINFOD_URLS", port.url().c_str(), 1);
  EXPECT_EQ(symbolize(), 0u);
  EXPECT_EQ(LibdebuginfodRequestCount(), before + 1);
  EXPECT_GE(port.connections.load(), 1);
  unsetenv("DEBUGINFOD_URLS");
}

// A hostile debuginfod server on a loopback port: answers every request with 200 and a body
// without Content-Length, `chunk` bytes every `pause_ms`, until the client hangs up or
// `max_bytes` went out (the bound of the test, not of the code under test).
class EndlessServer {
 public:
  EndlessServer(size_t chunk, int pause_ms, uint64_t max_bytes)
      : chunk_(chunk), pause_ms_(pause_ms), max_bytes_(max_bytes) {
    fd_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~EndlessServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint64_t bytes_sent() const { return sent_.load(); }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      const std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: "
          "close\r\n\r\n";
      bool ok = send(c, head.data(), head.size(), MSG_NOSIGNAL) > 0;
      const std::string body(chunk_, '\x7f');
      while (ok && !stop_ && sent_.load() < max_bytes_) {
        const ssize_t n = send(c, body.data(), body.size(), MSG_NOSIGNAL);
        ok = n > 0;
        if (ok) sent_ += static_cast<uint64_t>(n);
        if (pause_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
      }
      close(c);
    }
  }

  const size_t chunk_;
  const int pause_ms_;
  const uint64_t max_bytes_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<uint64_t> sent_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Bytes in the subdirectories of `dir`: what downloads left in libdebuginfod's cache (one
// directory per build-id; a failed request leaves an empty file there, its negative cache entry).
uint64_t BytesUnder(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 0 && it->is_regular_file()) bytes += it->file_size();
  }
  return bytes;
}

// Asks `server` for build_id_ with the environment variable `bound` set to `value`; the error
// must name `bound`, and nothing of the download may stay in libdebuginfod's cache.
void ExpectStoppedBy(const std::string& build_id, const std::string& cache_dir,
                     const EndlessServer& server, const char* bound, const char* value) {
  setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);
  setenv("DEBUGINFOD_CACHE_PATH", cache_dir.c_str(), 1);
  setenv(bound, value, 1);
  auto client = NewLibdebuginfodClient({.progress_fd = -1});
  auto found = client->FindDebuginfo(build_id);
  unsetenv("DEBUGINFOD_URLS");
  unsetenv(bound);
  EXPECT_FALSE(found.ok()) << *found;
  EXPECT_NE(found.status().message().find(bound), std::string_view::npos) << found.status();
  EXPECT_EQ(BytesUnder(cache_dir), 0u);
}

TEST_F(DebuginfodSourceTest, AnEndlessDownloadStopsAtDebuginfodMaxsizeAndLeavesNoFile) {
  // 256 MB at most from the server; the client is told 4 MB.
  EndlessServer server(64 << 10, 0, uint64_t{256} << 20);
  ExpectStoppedBy(build_id_, dir_.Join("debuginfod-cache"), server, "DEBUGINFOD_MAXSIZE",
                  "4000000");
  // What the client read, plus what the socket buffers held when it hung up.
  EXPECT_LT(server.bytes_sent(), uint64_t{64} << 20);
}

TEST_F(DebuginfodSourceTest, ASlowDownloadStopsAtDebuginfodMaxtimeAndLeavesNoFile) {
  // 4 KB every 50 ms for at most 10 minutes; the client is told 2 seconds.
  EndlessServer server(4096, 50, uint64_t{4096} * 20 * 600);
  ExpectStoppedBy(build_id_, dir_.Join("debuginfod-cache"), server, "DEBUGINFOD_MAXTIME", "2");
}

TEST(DebuginfodLimitsTest, TheUsersPositiveNumbersElseTheDefaults) {
  unsetenv("DEBUGINFOD_MAXSIZE");
  unsetenv("DEBUGINFOD_MAXTIME");
  DebuginfodLimits l = DebuginfodLimitsFromEnvironment();
  EXPECT_EQ(l.max_bytes, kDefaultDebuginfodMaxBytes);
  EXPECT_EQ(l.max_seconds, kDefaultDebuginfodMaxSeconds);
  setenv("DEBUGINFOD_MAXSIZE", "0", 1);  // libdebuginfod: no bound; here: the default
  setenv("DEBUGINFOD_MAXTIME", "soon", 1);
  l = DebuginfodLimitsFromEnvironment();
  EXPECT_EQ(l.max_bytes, kDefaultDebuginfodMaxBytes);
  EXPECT_EQ(l.max_seconds, kDefaultDebuginfodMaxSeconds);
  setenv("DEBUGINFOD_MAXSIZE", "12345", 1);
  setenv("DEBUGINFOD_MAXTIME", "7", 1);
  l = DebuginfodLimitsFromEnvironment();
  EXPECT_EQ(l.max_bytes, 12345u);
  EXPECT_EQ(l.max_seconds, 7);
  unsetenv("DEBUGINFOD_MAXSIZE");
  unsetenv("DEBUGINFOD_MAXTIME");
}

}  // namespace
}  // namespace hangwatch::symbols
