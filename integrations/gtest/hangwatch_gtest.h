// hangwatch for GoogleTest: a test whose main thread stalls longer than a budget fails, and the
// failure names the culprit stack. One line in a test main:
//
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     hangwatch::testing::InstallHangListener(std::chrono::milliseconds(500));
//     return RUN_ALL_TESTS();
//   }
//
// The listener starts the agent on the calling (main) thread with the budget as its hang
// threshold and every pass timed (Config::time_every_pass), and stops it when the test program
// ends. Each test body is one run-loop pass (a test that drives its own event loop through an
// integration splits it into the loop's passes). A test that ran longer than the budget waits, in
// OnTestEnd, for the agent to close and report the hang, and fails with its duration, class, CPU
// use and dominant stack.
//
// Every test's passes are recorded as test properties, which GoogleTest writes into its XML
// report (--gtest_output=xml): hangwatch_passes, hangwatch_p50_ms, hangwatch_p95_ms,
// hangwatch_p99_ms, hangwatch_max_ms, hangwatch_slow_passes_16ms (_33ms, _50ms, _100ms, ...).
//
// A test can set a budget of its own, stricter or looser than the listener's, for the rest of
// the test (the listener's comes back at the next test):
//
//   TEST(Checkout, RendersWithinOneFrame) {
//     using hangwatch::testing::TestBudget;
//     hangwatch::testing::ScopedTestBudget budget(
//         TestBudget().MaxPass(std::chrono::milliseconds(16)).MaxP99Ms(8));
//     RunTheEventLoopFor(std::chrono::seconds(2));
//   }
#ifndef HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_
#define HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hangwatch/hangwatch.h"

namespace hangwatch::testing {

// What a test may spend on its main thread. A pass longer than the shortest duration named here
// is sampled, so a broken budget names the code that broke it.
struct TestBudget {
  std::chrono::milliseconds max_pass{0};  // a longer pass fails the test; 0: the listener's budget
  double max_p99_ms = 0;                  // the 99th percentile of the test's passes; 0: none
  // {16, 3}: at most 3 passes longer than 16 ms. The durations are those of lag records: 16, 33,
  // 50, 100, 250, 500, 1000 ms.
  std::vector<std::pair<int, uint64_t>> max_slow_passes;

  // Chained setters: TestBudget().MaxPass(16ms).MaxP99Ms(8).MaxSlowPasses(16, 3).
  TestBudget& MaxPass(std::chrono::milliseconds ms) {
    max_pass = ms;
    return *this;
  }
  TestBudget& MaxP99Ms(double ms) {
    max_p99_ms = ms;
    return *this;
  }
  TestBudget& MaxSlowPasses(int longer_than_ms, uint64_t count) {
    max_slow_passes.emplace_back(longer_than_ms, count);
    return *this;
  }
};

struct HangListenerOptions {
  std::chrono::milliseconds budget{500};         // a longer stall fails the test
  std::chrono::milliseconds sample_interval{0};  // 0: budget / 10
  size_t max_frames_in_message = 12;
  std::string json_path;  // also write the hangs as JSON Lines; empty: no
};

class HangListener : public ::testing::EmptyTestEventListener {
 public:
  explicit HangListener(HangListenerOptions options);
  ~HangListener() override;

  // Whether the agent started; when not, `error()` says why and tests are not watched.
  bool watching() const { return watching_; }
  const std::string& error() const { return error_; }

  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;
  // Stops the agent (started by the constructor).
  void OnTestProgramEnd(const ::testing::UnitTest& unit_test) override;

  // The current test's budget from now on (ScopedTestBudget). False with error() when it names
  // a slow-pass duration lag records do not count, or the agent could not restart.
  bool SetTestBudget(const TestBudget& budget);

 private:
  void OnHang(const HangRecord& record);
  // (Re)starts the agent with `threshold` as its hang threshold.
  bool StartAgent(std::chrono::milliseconds threshold);
  // The failures of the test that just ended, one message each.
  std::vector<std::string> CheckBudget(const LagFigures& passes,
                                       const std::vector<HangRecord>& hangs) const;

  HangListenerOptions options_;
  bool watching_ = false;
  std::string error_;
  int callback_id_ = -1;
  PassHistogram passes_at_start_;
  TestBudget test_budget_;  // the current test's; max_pass == options_.budget unless set
  std::chrono::milliseconds threshold_{0};  // the running agent's
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HangRecord> hangs_;  // reported while the current test ran
};

// The current test's budget, from construction to the end of the test (a listener must be
// installed; without one it does nothing). A budget that cannot be set fails the test.
class ScopedTestBudget {
 public:
  explicit ScopedTestBudget(const TestBudget& budget);
  ScopedTestBudget(const ScopedTestBudget&) = delete;
  ScopedTestBudget& operator=(const ScopedTestBudget&) = delete;
};

// Creates a HangListener and appends it to GoogleTest's listeners (which own it). Returns it,
// or nullptr when the agent could not start (a warning is printed; tests still run).
HangListener* InstallHangListener(std::chrono::milliseconds budget);
HangListener* InstallHangListener(const HangListenerOptions& options);

// The failure message for a hang: duration, budget, class, CPU, dominant stack.
std::string DescribeHang(const HangRecord& record, size_t max_frames);

}  // namespace hangwatch::testing

#endif  // HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_
