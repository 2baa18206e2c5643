// A PostgreSQL 15 server for a test (real_component): initdb and pg_ctl as the postgres user,
// listening only on a Unix socket in the test's temporary directory; stopped at the end. The
// fixture skips, with the reason, where PostgreSQL, root or psycopg2 is missing. Used by the
// cause resolvers' and the agent's tests (tests/cause/), the preload shim's psycopg2 loop
// (tests/integrations/preload_handler_wait_test.cc) and its watched postmaster
// (tests/integrations/preload_prefork_test.cc).
#ifndef HANGWATCH_TESTS_POSTGRES_SERVER_H_
#define HANGWATCH_TESTS_POSTGRES_SERVER_H_

#include <pwd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/integrations/child_process.h"

namespace hangwatch::testing {

constexpr char kPgPython[] = "/usr/bin/python3.11";

constexpr char kPgBin[] = "/usr/lib/postgresql/15/bin";

// Runs argv (as the postgres user when `as_postgres`, with `env` set for it), to its end or
// `limit`; its stdout and exit code.
struct Output {
  int code = -1;
  std::string out;
};
inline Output RunCommand(std::vector<std::string> argv, bool as_postgres,
                         const std::vector<std::string>& env = {},
                         std::chrono::seconds limit = std::chrono::seconds(120)) {
  std::vector<std::string> full = {"/usr/bin/timeout", std::to_string(limit.count())};
  if (as_postgres) {
    full.insert(full.end(), {"/usr/sbin/runuser", "-u", "postgres", "--", "/usr/bin/env"});
    full.insert(full.end(), env.begin(), env.end());
  }
  full.insert(full.end(), argv.begin(), argv.end());
  ChildProcess child(full, as_postgres ? std::vector<std::string>{} : env);
  Output o;
  std::string line;
  while (child.ReadLine(&line, limit)) o.out += line + "\n";
  o.code = child.Wait();
  return o;
}

// A server of its own for each test: initdb and pg_ctl as the postgres user, a Unix socket in
// the temporary directory, no TCP. A subclass sets the postmaster's environment (StartEnv: the
// preload shim's tests start it watched) and whether psycopg2 is needed.
class PostgresServerTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> StartEnv() const { return {}; }
  virtual bool NeedsPsycopg2() const { return true; }

  void SetUp() override {
    if (access((std::string(kPgBin) + "/postgres").c_str(), X_OK) != 0 ||
        getpwnam("postgres") == nullptr) {
      GTEST_SKIP() << "PostgreSQL 15 is not installed (scripts/bootstrap.sh installs it)";
    }
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run PostgreSQL as the postgres user";
    if (NeedsPsycopg2() && RunCommand({kPgPython, "-c", "import psycopg2"}, false).code != 0) {
      GTEST_SKIP() << "psycopg2 is not installed (python3-psycopg2; scripts/bootstrap.sh)";
    }
    const passwd* pg = getpwnam("postgres");
    ASSERT_EQ(chown(dir_.path().c_str(), pg->pw_uid, pg->pw_gid), 0);
    const Output init = RunCommand({std::string(kPgBin) + "/initdb", "-D", data_, "--auth=trust",
                                    "-U", "postgres", "--no-sync"},
                                   true);
    ASSERT_EQ(init.code, 0) << init.out;
    // pg_ctl starts the postmaster through /bin/sh -c "exec postgres ...": a wrapper as well.
    const Output start = RunCommand(
        {std::string(kPgBin) + "/pg_ctl", "start", "-w", "-D", data_, "-l", dir_.path() + "/log",
         "-o", "-c listen_addresses='' -c unix_socket_directories=" + dir_.path()},
        true, StartEnv());
    ASSERT_EQ(start.code, 0) << start.out << ReadFile(dir_.path() + "/log");
    started_ = true;
  }
  void TearDown() override {
    if (!started_) return;
    const Output stop =
        RunCommand({std::string(kPgBin) + "/pg_ctl", "stop", "-w", "-m", "fast", "-D", data_}, true,
                   {}, std::chrono::seconds(60));
    EXPECT_EQ(stop.code, 0) << "the server did not shut down cleanly: " << stop.out
                            << ReadFile(dir_.path() + "/log");
  }

  TempDir dir_;
  std::string data_ = dir_.path() + "/data";
  bool started_ = false;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_POSTGRES_SERVER_H_
