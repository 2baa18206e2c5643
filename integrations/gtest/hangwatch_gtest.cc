#include "hangwatch_gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace hangwatch::testing {
namespace {

// The listener ScopedTestBudget talks to: the last one that started watching.
HangListener* g_listener = nullptr;

int SlowPassIndex(int ms) {
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    if (kSlowPassThresholdsMs[t] == ms) return t;
  }
  return -1;
}

// A path's file name, by report::ModuleFileName's rule (report/names.h), restated: this adapter
// sees the public API only (docs/architecture.md, Layers), so it cannot include the report's
// headers.
std::string FileName(const std::string& path) { return path.substr(path.find_last_of("/\\") + 1); }

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

std::string DescribeHangAgainst(const HangRecord& h, size_t max_frames, uint64_t budget_ms) {
  HangRecord copy = h;
  copy.threshold_ms = static_cast<uint32_t>(budget_ms);
  return DescribeHang(copy, max_frames);
}

// The longest of the hangs (the passes sampled because they were long), or nullptr.
const HangRecord* Longest(const std::vector<HangRecord>& hangs) {
  const HangRecord* longest = nullptr;
  for (const HangRecord& h : hangs) {
    if (longest == nullptr || h.duration_ms > longest->duration_ms) longest = &h;
  }
  return longest;
}

}  // namespace

HangListener::HangListener(HangListenerOptions options) : options_(std::move(options)) {
  callback_id_ = AddHangCallback([this](const HangRecord& r) { OnHang(r); });
  test_budget_.max_pass = options_.budget;
  watching_ = StartAgent(options_.budget);
  if (!watching_) {
    RemoveHangCallback(callback_id_);
    callback_id_ = -1;
    return;
  }
  g_listener = this;
}

bool HangListener::StartAgent(std::chrono::milliseconds threshold) {
  if (IsRunning()) Stop();
  Config config;
  config.threshold = threshold;
  config.sample_interval =
      threshold == options_.budget ? options_.sample_interval : std::chrono::milliseconds(0);
  config.json_path = options_.json_path;
  config.log_hangs = false;  // the test failure is the report
  config.time_every_pass = true;
  config.lag_interval = std::chrono::milliseconds(0);  // one lag record per agent, at Stop()
  const Status status = Start(config);
  if (!status.ok()) {
    error_ = status.message();
    return false;
  }
  threshold_ = threshold;
  return true;
}

bool HangListener::SetTestBudget(const TestBudget& budget) {
  if (!watching_) return false;
  TestBudget b = budget;
  if (b.max_pass.count() <= 0) b.max_pass = options_.budget;
  // The agent samples every pass longer than the shortest duration the budget names.
  std::chrono::milliseconds threshold = b.max_pass;
  if (b.max_p99_ms > 0) {
    threshold = std::min(threshold, std::chrono::milliseconds(std::max<int64_t>(
                                        1, static_cast<int64_t>(std::floor(b.max_p99_ms)))));
  }
  for (const auto& [ms, count] : b.max_slow_passes) {
    if (SlowPassIndex(ms) < 0) {
      error_ = "max_slow_passes: " + std::to_string(ms) +
               " ms is not one of 16, 33, 50, 100, 250, 500, 1000";
      return false;
    }
    threshold = std::min(threshold, std::chrono::milliseconds(ms));
  }
  test_budget_ = b;
  return threshold == threshold_ || StartAgent(threshold);
}

ScopedTestBudget::ScopedTestBudget(const TestBudget& budget) {
  if (g_listener != nullptr && !g_listener->SetTestBudget(budget)) {
    ADD_FAILURE() << "hangwatch: cannot set the test's budget: " << g_listener->error();
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
  if (g_listener == this) g_listener = nullptr;
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
  test_budget_ = TestBudget{};
  test_budget_.max_pass = options_.budget;
  // The previous test set a budget of its own: the listener's comes back.
  if (threshold_ != options_.budget && !StartAgent(options_.budget)) {
    std::fprintf(stderr, "hangwatch: cannot restart the agent: %s\n", error_.c_str());
  }
  passes_at_start_ = PassDurations();
  BeginWork();
}

void HangListener::OnTestEnd(const ::testing::TestInfo&) {
  if (!watching_) return;
  EndWork();
  const LagFigures passes = PassDurations().Since(passes_at_start_).Figures();
  std::unique_lock<std::mutex> lock(mu_);
  if (passes.max_ms > static_cast<double>(threshold_.count()) && hangs_.empty()) {
    // A pass (the test body, or the last of its loop's) just ended longer than the threshold;
    // the watchdog closes and reports the hang at its next check. Stopped time (a debugger) is
    // not counted by the agent, so there may be no hang: bounded wait.
    const auto interval = options_.sample_interval.count() > 0 && threshold_ == options_.budget
                              ? options_.sample_interval
                              : threshold_ / 10;
    cv_.wait_for(lock, std::max<std::chrono::milliseconds>(interval * 20, std::chrono::seconds(2)),
                 [this] { return !hangs_.empty(); });
  }
  std::vector<HangRecord> hangs = std::move(hangs_);
  hangs_.clear();
  lock.unlock();
  // OnTestEnd runs before the result printer's (end events go to listeners in reverse order),
  // while the test is still current: the properties and failures belong to it.
  using ::testing::Test;
  Test::RecordProperty("hangwatch_passes", std::to_string(passes.passes));
  Test::RecordProperty("hangwatch_p50_ms", Ms(passes.p50_ms));
  Test::RecordProperty("hangwatch_p95_ms", Ms(passes.p95_ms));
  Test::RecordProperty("hangwatch_p99_ms", Ms(passes.p99_ms));
  Test::RecordProperty("hangwatch_max_ms", Ms(passes.max_ms));
  for (int t = 0; t < kSlowPassThresholds; ++t) {
    Test::RecordProperty("hangwatch_slow_passes_" + std::to_string(kSlowPassThresholdsMs[t]) + "ms",
                         std::to_string(passes.slow_passes[t]));
  }
  for (const std::string& failure : CheckBudget(passes, hangs)) ADD_FAILURE() << failure;
}

std::vector<std::string> HangListener::CheckBudget(const LagFigures& passes,
                                                   const std::vector<HangRecord>& hangs) const {
  std::vector<std::string> failures;
  const TestBudget& b = test_budget_;
  const auto max_pass_ms = static_cast<uint64_t>(b.max_pass.count());
  for (const HangRecord& h : hangs) {
    if (h.duration_ms > max_pass_ms) {
      failures.push_back(DescribeHangAgainst(h, options_.max_frames_in_message, max_pass_ms));
    }
  }
  // Lag budgets name the longest pass that was sampled: the agent samples every pass longer
  // than the shortest duration of the budget (SetTestBudget).
  auto culprit = [&]() -> std::string {
    const HangRecord* longest = Longest(hangs);
    if (longest == nullptr) return "\nno pass was long enough to be sampled";
    return "\nthe longest pass: " +
           DescribeHangAgainst(*longest, options_.max_frames_in_message, max_pass_ms);
  };
  if (b.max_p99_ms > 0 && passes.p99_ms > b.max_p99_ms) {
    failures.push_back("hangwatch: the 99th percentile of " + std::to_string(passes.passes) +
                       " passes was " + Ms(passes.p99_ms) + " ms (budget " + Ms(b.max_p99_ms) +
                       " ms)" + culprit());
  }
  for (const auto& [ms, allowed] : b.max_slow_passes) {
    const int t = SlowPassIndex(ms);
    if (t >= 0 && passes.slow_passes[t] > allowed) {
      failures.push_back("hangwatch: " + std::to_string(passes.slow_passes[t]) +
                         " passes were longer than " + std::to_string(ms) + " ms (budget " +
                         std::to_string(allowed) + ")" + culprit());
    }
  }
  return failures;
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
    const std::string module = FileName(h.culprit.module);
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
    if (!f.module.empty()) out += " (" + FileName(f.module) + ")";
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
