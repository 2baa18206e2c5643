// The GoogleTest listener fails a test whose main thread stalls beyond the budget, naming the
// culprit, and leaves a quick test alone. The listener is exercised in a test program of its
// own (gtest_listener_fixture), run here as a child process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
};

Result RunFixture(const std::string& filter, const std::string& more = "") {
  Result r;
  // Appended piece by piece: GCC 12 sees a false out-of-bounds memcpy in the chain of operator+
  // (-Warray-bounds, an error under -Werror) once GoogleTest's headers come precompiled.
  std::string cmd = HANGWATCH_GTEST_FIXTURE;
  cmd += " --gtest_filter=";
  cmd += filter;
  cmd += " ";
  cmd += more;
  cmd += " 2>&1";
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

bool Has(const Result& r, const std::string& what) {
  return r.output.find(what) != std::string::npos;
}

// The number written right before `after` in `text` (-1 when `after` is not there). <regex>
// is left out: GCC 12 warns inside it when optimizing with the sanitizers.
double NumberBefore(const std::string& text, const std::string& after) {
  const size_t end = text.find(after);
  if (end == std::string::npos) return -1;
  size_t begin = end;
  while (begin > 0 &&
         (std::isdigit(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '.')) {
    --begin;
  }
  return begin == end ? -1 : std::stod(text.substr(begin, end - begin));
}

// The value of <property name="NAME" value="..."/> in `text`, as a number (-1 when absent).
double Property(const std::string& text, const std::string& name) {
  const std::string key = "name=\"" + name + "\" value=\"";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

TEST(GtestListener, StricterBudgetFailsAStallWithinTheListenersBudget) {
  const Result r = RunFixture("Budget.StricterFailsAShortStall");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "(budget 50 ms)")) << r.output;
  EXPECT_TRUE(Has(r, "\nin ShortStall\n")) << r.output;
}

TEST(GtestListener, LooserBudgetAllowsALongerStall) {
  const Result r = RunFixture("Budget.LooserAllowsALongStall");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(Has(r, "stalled for")) << r.output;
}

TEST(GtestListener, P99BudgetNamesTheSlowPass) {
  const Result r = RunFixture("Budget.P99OverBudgetNamesTheSlowPass");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "the 99th percentile of 101 passes was ")) << r.output;
  EXPECT_GT(NumberBefore(r.output, " ms (budget 10.000 ms)"), 10) << r.output;
  EXPECT_TRUE(Has(r, "\nthe longest pass: ")) << r.output;
  EXPECT_TRUE(Has(r, "\nin SlowFrame\n")) << r.output;
}

TEST(GtestListener, SlowPassBudgetCountsAndNamesTheSlowPass) {
  const Result r = RunFixture("Budget.TooManySlowPasses");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // Five slow passes (a loaded machine may stretch a quick one past 50 ms too).
  const double slow = NumberBefore(r.output, " passes were longer than 50 ms (budget 2)");
  EXPECT_GE(slow, 5) << r.output;
  EXPECT_LE(slow, 9) << r.output;
  EXPECT_TRUE(Has(r, "\nin SlowFrame\n")) << r.output;
}

TEST(GtestListener, TestWithinItsBudgetPassesAndItsPassesAreInTheXml) {
  const std::string xml = "/tmp/hangwatch_gtest_listener_" + std::to_string(getpid()) + ".xml";
  const Result r = RunFixture("Fixture.Quick:Budget.WithinItsBudget", "--gtest_output=xml:" + xml);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string text;
  if (FILE* f = fopen(xml.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
  }
  unlink(xml.c_str());
  // GoogleTest writes each recorded property into its <testcase>'s <properties>.
  const size_t within = text.find("name=\"WithinItsBudget\"");
  ASSERT_NE(within, std::string::npos) << text;
  const std::string test_case = text.substr(within, text.find("/testcase>", within) - within);
  EXPECT_TRUE(Has({0, test_case}, "name=\"hangwatch_passes\" value=\"56\"")) << test_case;
  EXPECT_GE(Property(test_case, "hangwatch_slow_passes_50ms"), 5) << test_case;
  EXPECT_LE(Property(test_case, "hangwatch_slow_passes_50ms"), 10) << test_case;
  EXPECT_GE(Property(test_case, "hangwatch_p99_ms"), 80) << test_case;  // a slow pass
  EXPECT_LT(Property(test_case, "hangwatch_p99_ms"), 150) << test_case;
  EXPECT_TRUE(Has({0, text}, "name=\"hangwatch_passes\" value=\"1\""))
      << "Fixture.Quick is one pass: " << text;
}

TEST(GtestListener, BudgetThatCannotBeSetFailsTheTest) {
  const Result r = RunFixture("Budget.UnknownSlowPassDuration");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "20 ms is not one of 16, 33, 50, 100, 250, 500, 1000")) << r.output;
}

}  // namespace
