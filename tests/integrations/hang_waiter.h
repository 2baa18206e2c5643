// Collects the hangs the agent reports (a hang callback) and lets a test wait for them with a
// deadline instead of sleeping: the adapters' thread tests wait for the hang they provoke.
#ifndef HANGWATCH_TESTS_INTEGRATIONS_HANG_WAITER_H_
#define HANGWATCH_TESTS_INTEGRATIONS_HANG_WAITER_H_

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "hangwatch/hangwatch.h"

namespace hangwatch::testing {

inline int64_t ThisThreadTid() { return static_cast<int64_t>(syscall(SYS_gettid)); }

class HangWaiter {
 public:
  // `on_hang`, when given, also runs (on the watchdog thread) after each hang is stored.
  explicit HangWaiter(std::function<void()> on_hang = {}) : on_hang_(std::move(on_hang)) {
    id_ = AddHangCallback([this](const HangRecord& h) {
      {
        std::lock_guard lock(mutex_);
        hangs_.push_back(h);
      }
      changed_.notify_all();
      if (on_hang_) on_hang_();
    });
  }
  ~HangWaiter() { RemoveHangCallback(id_); }
  HangWaiter(const HangWaiter&) = delete;
  HangWaiter& operator=(const HangWaiter&) = delete;

  // Waits until at least `n` hangs were reported or `deadline` passed; true when they were.
  bool WaitFor(size_t n, std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return hangs_.size() >= n; });
  }
  std::vector<HangRecord> Hangs() {
    std::lock_guard lock(mutex_);
    return hangs_;
  }

 private:
  std::function<void()> on_hang_;
  int id_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HangRecord> hangs_;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_INTEGRATIONS_HANG_WAITER_H_
