#include "tools/run/run_report_follower.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "tools/reader/line_reader.h"

namespace hangwatch::tools {

ReportFollower::ReportFollower(std::string path) : path_(std::move(path)) {
  struct stat st;
  if (stat((path_ + ".1").c_str(), &st) == 0) {
    old_dev_ = st.st_dev;
    old_ino_ = st.st_ino;
  }
  Take(path_, -1);
}

ReportFollower::~ReportFollower() { StopFollowing(); }

void ReportFollower::Follow() {
  follower_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      // Two rotations between polls are still followed (PATH.1 and PATH are both new); only a
      // third within 20 ms (16 MB of hangs each, at the agent's size) could slip by.
      stop_cv_.wait_for(lock, std::chrono::milliseconds(20));
      if (stop_) break;
      lock.unlock();
      Poll();
      lock.lock();
    }
  });
}

void ReportFollower::StopFollowing() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (follower_.joinable()) follower_.join();
}

bool ReportFollower::Seen(dev_t dev, ino_t ino) const {
  if (dev == old_dev_ && ino == old_ino_) return true;
  for (const Held& h : held_) {
    if (h.file.stat().st_dev == dev && h.file.stat().st_ino == ino) return true;
  }
  return false;
}

// Holds `name` unless it is a file already seen; from < 0: from its current size.
void ReportFollower::Take(const std::string& name, off_t from) {
  struct stat st;
  if (stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || Seen(st.st_dev, st.st_ino)) return;
  // InputFile's rule: an open never waits (a FIFO put in its place), only a regular file is
  // kept. A symbolic link is followed, as the writers follow it: --report may name one.
  InputFile file;
  std::string why;
  if (!file.Open(name, &why) || Seen(file.stat().st_dev, file.stat().st_ino)) return;
  const off_t size = file.stat().st_size;
  held_.push_back({std::move(file), from < 0 ? size : from});
}

void ReportFollower::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  // The older name first: after two rotations between polls, PATH.1 came before PATH.
  Take(path_ + ".1", 0);
  Take(path_, 0);
}

bool ReportFollower::ReadAppended(JsonLinesParser* parser, std::string* error) {
  StopFollowing();
  Poll();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Held& h : held_) {
    struct stat st;
    if (fstat(h.file.fd(), &st) != 0) continue;
    LineReader reader(h.file, static_cast<uint64_t>(st.st_size >= h.from ? h.from : 0));
    for (Line line; reader.Next(&line);) {
      if (line.too_long) {
        parser->AddTooLong();
      } else {
        parser->Add(line.text);
      }
    }
    if (reader.error() != 0) {
      *error = h.file.path() + ": " + std::strerror(reader.error());
      return false;
    }
  }
  return true;
}

}  // namespace hangwatch::tools
