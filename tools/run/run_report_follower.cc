#include "tools/run/run_report_follower.h"

#include <chrono>
#include <vector>

namespace hangwatch::tools {
namespace {

ReportFollower::Options RunFollowerOptions() {
  ReportFollower::Options o;
  o.globs = false;             // --report names one file, whatever its characters
  o.from_end_at_start = true;  // only what the run appends
  return o;
}

}  // namespace

// The older name first: after two rotations between polls, PATH.1 came before PATH.
RunReportFollower::RunReportFollower(const std::string& path)
    : files_({path + ".1", path}, RunFollowerOptions()) {}

RunReportFollower::~RunReportFollower() { StopFollowing(); }

void RunReportFollower::Follow() {
  follower_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      // Two rotations between polls are still followed (PATH.1 and PATH are both new); only a
      // third within 20 ms (16 MB of hangs each, at the agent's size) could slip by.
      stop_cv_.wait_for(lock, std::chrono::milliseconds(20));
      if (stop_) break;
      files_.Discover([](ReportFollower::Event) {});
    }
  });
}

void RunReportFollower::StopFollowing() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (follower_.joinable()) follower_.join();
}

void RunReportFollower::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  files_.Discover([](ReportFollower::Event) {});
}

bool RunReportFollower::ReadAppended(JsonLinesParser* parser, std::string* error) {
  StopFollowing();
  std::lock_guard<std::mutex> lock(mu_);
  return files_.ReadToEnd([parser](std::string_view line) { parser->Add(line); },
                          [parser](ReportFollower::Event event) {
                            if (event == ReportFollower::Event::kTooLong) parser->AddTooLong();
                          },
                          error);
}

}  // namespace hangwatch::tools
