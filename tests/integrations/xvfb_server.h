// A private X server for a test: Debian's Xvfb on a display number it picks itself (-displayfd,
// so tests running side by side never race for one), no TCP. Stopped with SIGTERM (Xvfb then
// removes its socket and lock file) and reaped by the destructor. Header-only.
#ifndef HANGWATCH_TESTS_INTEGRATIONS_XVFB_SERVER_H_
#define HANGWATCH_TESTS_INTEGRATIONS_XVFB_SERVER_H_

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "child_process.h"

namespace hangwatch::testing {

constexpr char kXvfb[] = "/usr/bin/Xvfb";

class XvfbServer {
 public:
  // Starts Xvfb and waits (up to 20 s) until its socket exists; ok() tells whether it did.
  XvfbServer() {
    if (access(kXvfb, X_OK) != 0) return;
    // -displayfd 1: the display number is written to our pipe once the server accepts clients.
    server_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kXvfb, "-displayfd", "1", "-nolisten", "tcp", "-screen", "0",
                                 "640x480x24"},
        std::vector<std::string>{});
    std::string number;
    if (!server_->ReadLine(&number, std::chrono::seconds(20)) || number.empty() ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      return;
    }
    const std::string socket_path = "/tmp/.X11-unix/X" + number;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    struct stat st {};
    while (stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      if (std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    display_ = ":" + number;
  }
  ~XvfbServer() {
    if (server_ == nullptr || server_->pid() <= 0) return;
    kill(server_->pid(), SIGTERM);
    server_->WaitAtMost(std::chrono::seconds(10));  // kills and reaps it if it lingers
  }
  XvfbServer(const XvfbServer&) = delete;
  XvfbServer& operator=(const XvfbServer&) = delete;

  bool ok() const { return !display_.empty(); }
  // ":N", the value for DISPLAY.
  const std::string& display() const { return display_; }

 private:
  std::unique_ptr<ChildProcess> server_;
  std::string display_;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_INTEGRATIONS_XVFB_SERVER_H_
