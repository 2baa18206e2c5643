// DisplayInput against a real X server: a private Xvfb, a window opened in this process with
// Xlib, xdotool moving the pointer into it and typing. Without reading the events, a
// DisplayInput with no hint finds the connection among /proc/self/fd, counts the waiting input
// and ages it against the server's own timestamps (Xvfb stamps CLOCK_MONOTONIC ms); then the
// events Xlib reads are the same as in a run where nobody looked (the peek consumed nothing).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/context/display_input.h"

// Last: Xlib's macros (None, Bool, Status) would break the headers above.
#include <X11/Xlib.h>

extern char** environ;

namespace hangwatch::agent {
namespace {

constexpr char kXvfb[] = "/usr/bin/Xvfb";
constexpr char kXdotool[] = "/usr/bin/xdotool";

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// Xvfb on the first free display of 90..99, ready when it wrote its number to -displayfd.
// Stopped by the destructor (SIGTERM, then SIGKILL); if this process dies first, the kernel
// sends it SIGTERM (PR_SET_PDEATHSIG), so no path leaves it running.
class PrivateXvfb {
 public:
  PrivateXvfb() {
    for (int n = 90; n <= 99 && pid_ <= 0; ++n) TryDisplay(n);
  }
  ~PrivateXvfb() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  PrivateXvfb(const PrivateXvfb&) = delete;
  PrivateXvfb& operator=(const PrivateXvfb&) = delete;

  bool ok() const { return pid_ > 0; }
  std::string name() const { return ":" + std::to_string(number_); }

 private:
  void TryDisplay(int n) {
    if (access(("/tmp/.X" + std::to_string(n) + "-lock").c_str(), F_OK) == 0) return;
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      dup2(ready[1], 3);  // a fresh descriptor 3, inherited (no close-on-exec)
      if (ready[1] == 3) fcntl(3, F_SETFD, 0);
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      const std::string display = ":" + std::to_string(n);
      // -noreset: the server would reset (refusing connections) whenever its last client left,
      // as each xdotool run does.
      execl(kXvfb, "Xvfb", display.c_str(), "-displayfd", "3", "-nolisten", "tcp", "-noreset",
            "-screen", "0", "640x480x24", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(ready[1]);
    char number[16] = {};
    size_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (pid > 0 && got < sizeof number - 1 && std::chrono::steady_clock::now() < deadline) {
      pollfd p{ready[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const ssize_t r = read(ready[0], number + got, sizeof number - 1 - got);
      if (r <= 0) break;  // it exited: the display was taken meanwhile
      got += static_cast<size_t>(r);
      if (number[got - 1] == '\n') break;
    }
    close(ready[0]);
    if (pid > 0 && got > 0 && std::atoi(number) == n) {
      pid_ = pid;
      number_ = n;
      return;
    }
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

  pid_t pid_ = -1;
  int number_ = -1;
};

// Runs a program to its end (DISPLAY from our environment); its exit status.
int Run(std::vector<std::string> argv) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits (at most 10 s) until at least `bytes` wait unread on `fd`: the server has sent what
// xdotool made. Not a sleep: it polls for the condition.
bool WaitForBytes(int fd, int bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int waiting = 0;
  while (ioctl(fd, FIONREAD, &waiting) == 0 && waiting < bytes) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return waiting >= bytes;
}

using EventSequence = std::vector<std::pair<int, unsigned>>;  // (type, keycode)

constexpr int kTypedKeys = 3;
constexpr int kInputEvents = 1 + 2 * kTypedKeys;  // the motion into the window, press + release

// One run: a focused window selecting key, button and motion input, the pointer moved into it
// and "a b c" typed, then (when `look`) two looks 300 ms apart, then every event read by Xlib.
EventSequence TypeIntoAWindow(const PrivateXvfb& x, bool look) {
  EventSequence read;
  EXPECT_EQ(Run({kXdotool, "mousemove", "--sync", "500", "400"}), 0);  // outside the window
  Display* dpy = XOpenDisplay(x.name().c_str());
  EXPECT_NE(dpy, nullptr);
  if (dpy == nullptr) return read;
  const Window window = XCreateSimpleWindow(dpy, DefaultRootWindow(dpy), 0, 0, 200, 200, 0, 0, 0);
  XSelectInput(dpy, window, KeyPressMask | KeyReleaseMask | ButtonPressMask | PointerMotionMask);
  XMapWindow(dpy, window);
  XSync(dpy, False);
  XSetInputFocus(dpy, window, RevertToParent, CurrentTime);
  XSync(dpy, False);

  EXPECT_EQ(Run({kXdotool, "mousemove", "--sync", "50", "50"}), 0);
  EXPECT_EQ(Run({kXdotool, "key", "a", "b", "c"}), 0);
  EXPECT_TRUE(WaitForBytes(ConnectionNumber(dpy), kInputEvents * 32));

  InputSnapshot first, second;
  if (look) {
    DisplayInput display;  // no hint: it finds the connection itself
    EXPECT_TRUE(display.Look(MonotonicNs(), &first));
    EXPECT_EQ(display.display_fd(), ConnectionNumber(dpy));
    EXPECT_TRUE(display.is_x11());
    EXPECT_TRUE(first.known);
    EXPECT_TRUE(first.pending);
    EXPECT_FALSE(first.lower_bound);
    EXPECT_GE(first.events, static_cast<uint32_t>(2 * kTypedKeys));
    EXPECT_EQ(first.kinds, kInputKey | kInputMotion);
    EXPECT_TRUE(first.oldest_known);
    EXPECT_LT(first.oldest_ms, 5000u);

    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(display.Look(MonotonicNs(), &second));
    EXPECT_EQ(second.events, first.events);
    EXPECT_TRUE(second.oldest_known);
    EXPECT_GE(second.oldest_ms, first.oldest_ms + 250);  // the server's clock is ours
    EXPECT_LT(second.oldest_ms, first.oldest_ms + 5000);
  }

  XSync(dpy, False);  // reads whatever the server sent into Xlib's queue
  uint32_t oldest_server_ms = 0;
  while (XPending(dpy) > 0) {
    XEvent event;
    XNextEvent(dpy, &event);
    const bool key = event.type == KeyPress || event.type == KeyRelease;
    if (read.empty()) oldest_server_ms = static_cast<uint32_t>(event.xmotion.time);
    read.emplace_back(event.type, key ? event.xkey.keycode : 0u);
  }
  const uint32_t now_ms = static_cast<uint32_t>(MonotonicNs() / 1'000'000);
  EXPECT_LT(now_ms - oldest_server_ms, 10'000u) << "the server's times are not our monotonic ms";
  if (look) {
    EXPECT_EQ(first.events, read.size());
  }
  XCloseDisplay(dpy);
  return read;
}

TEST(DisplayInputRealTest, FindsTheConnectionSeesTheTypedInputAndConsumesNothing) {
  if (access(kXvfb, X_OK) != 0 || access(kXdotool, X_OK) != 0) {
    GTEST_SKIP() << "needs Xvfb and xdotool (scripts/bootstrap.sh)";
  }
  PrivateXvfb x;
  ASSERT_TRUE(x.ok()) << "no free display in :90..:99";
  setenv("DISPLAY", x.name().c_str(), 1);

  const EventSequence looked = TypeIntoAWindow(x, /*look=*/true);
  const EventSequence unlooked = TypeIntoAWindow(x, /*look=*/false);
  EXPECT_EQ(looked.size(), static_cast<size_t>(kInputEvents));
  EXPECT_EQ(looked, unlooked);
  int keys = 0;
  for (const auto& [type, keycode] : looked) keys += (type == KeyPress || type == KeyRelease);
  EXPECT_EQ(keys, 2 * kTypedKeys);

  // Every connection closed: none to find.
  DisplayInput display;
  InputSnapshot s;
  EXPECT_FALSE(display.Look(MonotonicNs(), &s));
  EXPECT_FALSE(s.known);
}

}  // namespace
}  // namespace hangwatch::agent
