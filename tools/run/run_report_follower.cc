#include "tools/run/run_report_follower.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

namespace hangwatch::tools {

ReportFollower::ReportFollower(std::string path) : path_(std::move(path)) {
  struct stat st;
  if (stat((path_ + ".1").c_str(), &st) == 0) {
    old_dev_ = st.st_dev;
    old_ino_ = st.st_ino;
  }
  Take(path_, -1);
}

ReportFollower::~ReportFollower() {
  StopFollowing();
  for (const Held& h : held_) close(h.fd);
}

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
    if (h.dev == dev && h.ino == ino) return true;
  }
  return false;
}

// Holds `name` unless it is a file already seen; from < 0: from its current size.
void ReportFollower::Take(const std::string& name, off_t from) {
  struct stat st;
  if (stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || Seen(st.st_dev, st.st_ino)) return;
  // O_NONBLOCK: whatever is there now, an open never waits (a FIFO put in its place). A
  // symbolic link is followed, as the writers follow it: --report may name one.
  const int fd = open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || Seen(st.st_dev, st.st_ino)) {
    close(fd);
    return;
  }
  held_.push_back({fd, st.st_dev, st.st_ino, from < 0 ? st.st_size : from});
}

void ReportFollower::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  // The older name first: after two rotations between polls, PATH.1 came before PATH.
  Take(path_ + ".1", 0);
  Take(path_, 0);
}

std::string ReportFollower::ReadAppended() {
  StopFollowing();
  Poll();
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const Held& h : held_) {
    struct stat st;
    if (fstat(h.fd, &st) != 0) continue;
    off_t at = st.st_size >= h.from ? h.from : 0;
    // Each file on a line boundary: a torn last line of one file must not join the next.
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    char buf[1 << 16];
    for (ssize_t n; (n = pread(h.fd, buf, sizeof buf, at)) > 0; at += n) {
      out.append(buf, static_cast<size_t>(n));
    }
  }
  return out;
}

}  // namespace hangwatch::tools
