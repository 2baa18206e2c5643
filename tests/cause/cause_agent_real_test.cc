// The agent's hang causes on real servers started here (real_component):
//   - libpq (the library psycopg2 runs its queries through) executing SELECT pg_sleep(1)
//     against a real PostgreSQL 15 inside a pass: a hang of cause ipc naming the postgres
//     backend's pid over the server's Unix socket;
//   - a read of a file of a FUSE file system (cause_slow_fuse) whose read sleeps 800 ms: a hang
//     of cause io with the file's path and the kernel function it waits in.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/cause/slow_servers.h"
#include "tests/integrations/child_process.h"
#include "tests/postgres_server.h"

namespace hangwatch {
namespace {

using ::hangwatch::testing::ChildProcess;
using ::hangwatch::testing::PostgresServerTest;
using ::hangwatch::testing::TempDir;

TEST_F(PostgresServerTest, PgSleepInAPassNamesThePostgresBackend) {
  const std::string conninfo = "host=" + dir_.path() + " user=postgres dbname=postgres";
  PGconn* conn = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  const int backend = PQbackendPID(conn);
  ASSERT_GT(backend, 0);

  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  PGresult* r = PQexec(conn, "SELECT pg_sleep(1)");
  EndWork();
  const bool reported = collector.WaitFor(1);
  Stop();
  EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(conn);
  PQclear(r);
  const int fd = PQsocket(conn);
  PQfinish(conn);
  ASSERT_TRUE(reported);

  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kIpc) << h.cause.summary;
  EXPECT_EQ(h.cause.path, dir_.path() + "/.s.PGSQL.5432") << h.cause.summary;
  ASSERT_FALSE(h.cause.fds.empty());
  EXPECT_EQ(h.cause.fds[0], fd);
  ASSERT_EQ(h.cause.peers.size(), 1u) << h.cause.summary;
  EXPECT_EQ(h.cause.peers[0].pid, backend) << h.cause.summary;
  EXPECT_EQ(h.cause.peers[0].name, "postgres");
  EXPECT_NE(
      h.cause.summary.find("waiting for process " + std::to_string(backend) + " \"postgres\""),
      std::string::npos)
      << h.cause.summary;
}

TEST(FuseIoCause, ReadOfASlowFuseFileInAPassIsIoOnItsPath) {
#ifndef HANGWATCH_SLOW_FUSE
  GTEST_SKIP() << "libfuse3-dev was not found when configuring: cause_slow_fuse was not built";
#else
  TempDir dir;
  std::unique_ptr<ChildProcess> server;
  std::string why_not;
  const std::string mnt =
      testing::MountSlowFuse(HANGWATCH_SLOW_FUSE, dir.path(), &server, &why_not);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  ASSERT_FALSE(mnt.empty());
  const std::string file = mnt + "/slow.txt";
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);

  ASSERT_TRUE(Start(testing::TestConfig()).ok());
  testing::HangCollector collector;
  BeginWork();
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf);
  EndWork();
  const bool reported = collector.WaitFor(1);
  Stop();
  close(fd);
  umount2(mnt.c_str(), MNT_DETACH);
  server->WaitAtMost(std::chrono::seconds(10));
  EXPECT_GE(n, 0);
  ASSERT_TRUE(reported);

  const HangRecord h = collector.hangs()[0];
  ASSERT_EQ(h.cause.kind, CauseKind::kIo) << h.cause.summary;
  EXPECT_EQ(h.cause.path, file);
  EXPECT_NE(h.cause.wchan, "") << h.cause.summary;
  EXPECT_NE(h.cause.summary.find("waiting for I/O on " + file + " in read("), std::string::npos)
      << h.cause.summary;
  if (geteuid() == 0) {
    // Root reads the kernel stack: the wait is in FUSE.
    EXPECT_NE(h.cause.kernel_stack.find("fuse"), std::string::npos) << h.cause.kernel_stack;
  }
  std::printf("cause: %s\nkernel stack: %s\n", h.cause.summary.c_str(),
              h.cause.kernel_stack.c_str());
#endif
}

}  // namespace
}  // namespace hangwatch
