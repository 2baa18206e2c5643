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
// threshold, and stops it when the test program ends. Each test body is one run-loop pass (a test
// that drives its own event loop through an integration splits it into the loop's passes). A test
// that ran longer than the budget waits, in OnTestEnd, for the agent to close and report the hang,
// and fails with its duration, class, CPU use and dominant stack.
#ifndef HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_
#define HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "hangwatch/hangwatch.h"

namespace hangwatch::testing {

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

 private:
  void OnHang(const HangRecord& record);

  HangListenerOptions options_;
  bool watching_ = false;
  std::string error_;
  int callback_id_ = -1;
  std::chrono::steady_clock::time_point test_start_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HangRecord> hangs_;  // reported while the current test ran
};

// Creates a HangListener and appends it to GoogleTest's listeners (which own it). Returns it,
// or nullptr when the agent could not start (a warning is printed; tests still run).
HangListener* InstallHangListener(std::chrono::milliseconds budget);
HangListener* InstallHangListener(const HangListenerOptions& options);

// The failure message for a hang: duration, budget, class, CPU, dominant stack.
std::string DescribeHang(const HangRecord& record, size_t max_frames);

}  // namespace hangwatch::testing

#endif  // HANGWATCH_INTEGRATIONS_GTEST_HANGWATCH_GTEST_H_
