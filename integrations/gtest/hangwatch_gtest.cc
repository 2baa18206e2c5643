#include "hangwatch_gtest.h"

#include <cstdio>

namespace hangwatch::testing {

HangListener::HangListener(HangListenerOptions options) : options_(std::move(options)) {
  Config config;
  config.threshold = options_.budget;
  config.sample_interval = options_.sample_interval;
  config.json_path = options_.json_path;
  config.log_hangs = false;  // the test failure is the report
  callback_id_ = AddHangCallback([this](const HangRecord& r) { OnHang(r); });
  const Status status = Start(config);
  watching_ = status.ok();
  if (!watching_) {
    error_ = status.message();
    RemoveHangCallback(callback_id_);
    callback_id_ = -1;
  }
}

// GoogleTest destroys its listeners at exit, after the agent's own static state may be gone:
// the agent is stopped in OnTestProgramEnd instead, and the destructor does not touch it.
HangListener::~HangListener() = default;

void HangListener::OnTestProgramEnd(const ::testing::UnitTest&) {
  if (!watching_) return;
  RemoveHangCallback(callback_id_);
  callback_id_ = -1;
  Stop();
  watching_ = false;
}

void HangListener::OnHang(const HangRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  hangs_.push_back(record);
  cv_.notify_all();
}

void HangListener::OnTestStart(const ::testing::TestInfo&) {
  if (!watching_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hangs_.clear();
  }
  test_start_ = std::chrono::steady_clock::now();
  BeginWork();
}

void HangListener::OnTestEnd(const ::testing::TestInfo&) {
  if (!watching_) return;
  EndWork();
  const auto elapsed = std::chrono::steady_clock::now() - test_start_;
  std::unique_lock<std::mutex> lock(mu_);
  if (elapsed > options_.budget && hangs_.empty()) {
    // The pass just ended; the watchdog closes and reports the hang at its next check. Stopped
    // time (a debugger) is not counted by the agent, so there may be no hang: bounded wait.
    const auto interval =
        options_.sample_interval.count() > 0 ? options_.sample_interval : options_.budget / 10;
    cv_.wait_for(lock, std::max<std::chrono::milliseconds>(interval * 20, std::chrono::seconds(2)),
                 [this] { return !hangs_.empty(); });
  }
  std::vector<HangRecord> hangs = std::move(hangs_);
  hangs_.clear();
  lock.unlock();
  // OnTestEnd runs before the result printer's (end events go to listeners in reverse order),
  // while the test is still current: the failure belongs to it.
  for (const HangRecord& h : hangs) {
    ADD_FAILURE() << DescribeHang(h, options_.max_frames_in_message);
  }
}

std::string DescribeHang(const HangRecord& h, size_t max_frames) {
  char head[256];
  std::snprintf(head, sizeof head,
                "hangwatch: the main thread stalled for %llu ms (budget %u ms): %s, CPU %u%%, "
                "%u samples",
                static_cast<unsigned long long>(h.duration_ms), h.threshold_ms,
                HangClassName(h.hang_class), h.cpu_percent, h.samples);
  std::string out = head;
  const Stack* d = h.dominant();
  if (d == nullptr) return out + "; no stack captured";
  if (!h.culprit.empty()) {
    // The innermost frame outside the system's libraries and runtimes (hang_record.h).
    char offset[32];
    std::snprintf(offset, sizeof offset, "0x%llx",
                  static_cast<unsigned long long>(h.culprit.offset));
    const std::string module = h.culprit.module.substr(h.culprit.module.rfind('/') + 1);
    out += "\nin " + (!h.culprit.symbol.empty() ? h.culprit.symbol
                      : module.empty()          ? std::string(offset)
                                                : module + "+" + offset);
    if (!h.culprit.file.empty()) {
      out += " at " + h.culprit.file + ":" + std::to_string(h.culprit.line);
    }
  }
  out += "\nculprit stack (" + std::to_string(d->count) + " of " + std::to_string(h.samples) +
         " samples):";
  for (size_t i = 0; i < d->frames.size() && i < max_frames; ++i) {
    const Frame& f = d->frames[i];
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(f.addr));
    out += "\n  #" + std::to_string(i) + " " + (f.symbol.empty() ? addr : f.symbol);
    if (!f.file.empty()) out += " at " + f.file + ":" + std::to_string(f.line);
    if (!f.module.empty()) out += " (" + f.module.substr(f.module.rfind('/') + 1) + ")";
  }
  return out;
}

HangListener* InstallHangListener(std::chrono::milliseconds budget) {
  HangListenerOptions options;
  options.budget = budget;
  return InstallHangListener(options);
}

HangListener* InstallHangListener(const HangListenerOptions& options) {
  auto* listener = new HangListener(options);
  if (!listener->watching()) {
    std::fprintf(stderr, "hangwatch: tests are not watched for hangs: %s\n",
                 listener->error().c_str());
    delete listener;
    return nullptr;
  }
  ::testing::UnitTest::GetInstance()->listeners().Append(listener);
  return listener;
}

}  // namespace hangwatch::testing
