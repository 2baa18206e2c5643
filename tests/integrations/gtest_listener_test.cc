// The GoogleTest listener fails a test whose main thread stalls beyond the budget, naming the
// culprit, and leaves a quick test alone. The listener is exercised in a test program of its
// own (gtest_listener_fixture), run here as a child process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
};

Result RunFixture(const std::string& filter) {
  Result r;
  const std::string cmd =
      std::string(HANGWATCH_GTEST_FIXTURE) + " --gtest_filter=" + filter + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(GtestListener, QuickTestPasses) {
  const Result r = RunFixture("Fixture.Quick");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[       OK ] Fixture.Quick"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("hangwatch: the main thread stalled"), std::string::npos) << r.output;
}

TEST(GtestListener, StallingTestFailsNamingTheCulprit) {
  const Result r = RunFixture("Fixture.*");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("[  FAILED  ] Fixture.Stalls"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[       OK ] Fixture.Quick"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stalled for"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(budget 200 ms)"), std::string::npos) << r.output;
  // The culprit is the top of the dominant stack.
  EXPECT_NE(r.output.find("#0 StallInsideTest"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nin StallInsideTest\n"), std::string::npos) << r.output;
}

}  // namespace
