// Prefork servers under the preload shim: the parent reaches its event loop (and arms) first,
// then forks its workers. Each worker arms at its own first wait, reports its own stalls with
// its own pid, and exits normally.
//   - a Python prefork server: workers forked after the parent's first select();
//   - the real PostgreSQL 15 from Debian, started by pg_ctl as the postgres user on a Unix
//     socket in a temporary directory: a busy query is one busy hang in its backend, with
//     executor frames; pg_sleep (a latch wait in epoll) is idle; the server stops cleanly.
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "tests/postgres_server.h"
#include "tools/reader/report_reader.h"

namespace hangwatch::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

tools::Report ReadReport(const std::string& path) {
  tools::Report r;
  std::string error;
  tools::ParseJsonLines(ReadFile(path), &r, &error);
  return r;
}

bool AnyFrameStartsWith(const HangRecord& h, const std::string& prefix) {
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) {
      if (f.symbol.rfind(prefix, 0) == 0) return true;
    }
  }
  return false;
}

// Sends `request` to the Unix socket at `path`, returns the reply (read until EOF).
std::string Ask(const std::string& path, const std::string& request) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    shutdown(fd, SHUT_WR);
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

// The parent listens, reaches its loop, then forks two workers sharing the socket. A worker
// answers "slow" after half a second of computation, "quit" by leaving through sys.exit. The
// parent reaps both and exits.
constexpr char kPreforkServer[] = R"(
import os, select, socket, sys, time
path = sys.argv[1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(path)
sock.listen(16)
select.select([sock], [], [], 0.05)  # the parent's event loop: it arms here
def worker():
    while True:
        select.select([sock], [], [])
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            continue
        request = conn.recv(64)
        if request == b'slow':
            end = time.monotonic() + 0.5
            while time.monotonic() < end: pass
        conn.sendall(b'%d' % os.getpid())
        conn.close()
        if request == b'quit':
            sys.exit(0)
sock.setblocking(False)
workers = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        worker()
    workers.append(pid)
print('ready', flush=True)
for pid in workers:
    _, status = os.waitpid(pid, 0)
    print(pid, os.waitstatus_to_exitcode(status), flush=True)
)";

TEST(PreloadPrefork, PythonWorkersForkedAfterTheParentArmedAreWatched) {
  TempDir dir;
  const std::string report = dir.path() + "/hangs.jsonl";
  const std::string socket_path = dir.path() + "/server.sock";
  ChildProcess server(
      {kPython, "-c", kPreforkServer, socket_path},
      {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_REPORT=" + report, "HANGWATCH_LOG=0",
       "HANGWATCH_THRESHOLD_MS=150", "HANGWATCH_OPEN_HANG_DIR=" + dir.path()});
  std::string line;
  ASSERT_TRUE(server.ReadLine(&line, std::chrono::seconds(30)));
  ASSERT_EQ(line, "ready");
  std::set<int> slow_workers;
  for (int i = 0; i < 4; ++i) slow_workers.insert(std::atoi(Ask(socket_path, "slow").c_str()));
  // Each quit ends one worker; which one answers is the kernel's choice.
  std::set<int> exited;
  std::map<int, int> statuses;
  while (exited.size() < 2) {
    const int pid = std::atoi(Ask(socket_path, "quit").c_str());
    ASSERT_GT(pid, 0) << "no worker answered";
    exited.insert(pid);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(server.ReadLine(&line, std::chrono::seconds(30))) << "a worker did not exit";
    int pid = 0, status = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d %d", &pid, &status), 2) << line;
    statuses[pid] = status;
  }
  EXPECT_EQ(server.Wait(), 0);
  for (int pid : exited) EXPECT_EQ(statuses[pid], 0) << "worker " << pid << " exit status";

  // Each worker that served a slow request has a busy hang with its own pid; its open-hang
  // file, beside the parent's while it ran, is gone: it exited outside a hang.
  const tools::Report r = ReadReport(report);
  std::map<int, int> busy_hangs;
  for (const HangRecord& h : r.hangs) {
    // (The parent's own passes are waits for its workers in waitpid: blocked, not busy.)
    if (h.hang_class == HangClass::kBusy) ++busy_hangs[h.pid];
  }
  for (int pid : slow_workers) {
    EXPECT_GT(busy_hangs[pid], 0) << "worker " << pid << " served a slow request unwatched\n"
                                  << ReadFile(report);
  }
  for (int pid : slow_workers) {
    EXPECT_NE(access((dir.path() + "/open-hang." + std::to_string(pid)).c_str(), F_OK), 0)
        << "worker " << pid << " left its open-hang file behind";
  }
}

// ---- PostgreSQL ----

// The postmaster is started under the shim (pg_ctl through /bin/sh -c "exec postgres ...": a
// wrapper as well); every backend it forks is watched.
class PostgresTest : public testing::PostgresServerTest {
 protected:
  std::vector<std::string> StartEnv() const override {
    return {"LD_PRELOAD=" HANGWATCH_PRELOAD_LIB, "HANGWATCH_REPORT=" + report_, "HANGWATCH_LOG=0",
            "HANGWATCH_THRESHOLD_MS=200", "HANGWATCH_OPEN_HANG_DIR=" + dir_.path()};
  }
  bool NeedsPsycopg2() const override { return false; }

  // One psql session running `statements` in order; one output line per row.
  testing::Output Query(const std::vector<std::string>& statements) {
    std::vector<std::string> argv = {"/usr/bin/psql", "-X", "-At",     "-h", dir_.path(), "-U",
                                     "postgres",      "-d", "postgres"};
    for (const std::string& s : statements) argv.insert(argv.end(), {"-c", s});
    return testing::RunCommand(argv, false);
  }

  std::string report_ = dir_.path() + "/hangs.jsonl";
};

TEST_F(PostgresTest, BusyQueryIsOneBusyHangInItsBackendAndPgSleepIsIdle) {
  // One session: pg_sleep first (a latch wait in epoll: the backend's first blocking wait, so
  // it arms there; idle, not a hang), then the busy query in the same backend. (A backend that
  // finds its first query already waiting never waits before running it, and work before a
  // process's first wait is not watched: see the launch rules in docs/run.md.)
  const testing::Output out =
      Query({"select pg_sleep(1.5)",
             "select pg_backend_pid(), count(*) from generate_series(1, 8000000) g "
             "where g % 7 = 3"});
  ASSERT_EQ(out.code, 0) << out.out;
  const int backend =
      std::atoi(out.out.substr(out.out.rfind('\n', out.out.size() - 2) + 1).c_str());
  ASSERT_GT(backend, 0) << out.out;

  // The backend reports when its pass ends, before psql gets its answer; the file is read
  // until the record is there (bounded).
  std::vector<HangRecord> hangs;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (hangs.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const HangRecord& h : ReadReport(report_).hangs) {
      if (h.pid == backend) hangs.push_back(h);
    }
    if (hangs.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(hangs.size(), 1u) << "one hang, the busy query; pg_sleep is idle\n"
                              << ReadFile(report_);
  const HangRecord& h = hangs[0];
  EXPECT_EQ(h.tid, backend) << "the backend's main thread";
  EXPECT_EQ(h.hang_class, HangClass::kBusy);
  EXPECT_GE(h.duration_ms, 200u);
  EXPECT_FALSE(AnyFrameStartsWith(h, "pg_sleep")) << "the pg_sleep before it is not part of it";
  EXPECT_TRUE(AnyFrameStartsWith(h, "Exec")) << "executor frames: " << ReadFile(report_);
}

}  // namespace
}  // namespace hangwatch::testing
