// A child process that holds descriptors for a test: forked, named with PR_SET_NAME, it runs a
// function (async-signal-safe only) and then waits to be killed; killed and reaped by the
// destructor.
#ifndef HANGWATCH_TESTS_CAUSE_PEER_CHILD_H_
#define HANGWATCH_TESTS_CAUSE_PEER_CHILD_H_

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace hangwatch::testing {

class PeerChild {
 public:
  // `body` runs in the child after the rename; the child then sleeps until killed (at most
  // 60 s). Descriptors of the parent stay open in the child unless `body` closes them.
  // The constructor returns once the child has its name (before `body` runs, which may block),
  // or, with `after_body`, once `body` has returned (a body that closes descriptors: the test
  // then sees the child's table as the body left it).
  template <typename F>
  PeerChild(const char* name, F&& body, bool after_body = false) {
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_NAME, name);
      close(ready[0]);
      if (!after_body) close(ready[1]);  // EOF: named
      body();
      if (after_body) close(ready[1]);
      for (int i = 0; i < 600; ++i) usleep(100'000);
      _exit(0);
    }
    close(ready[1]);
    char c;
    while (read(ready[0], &c, 1) < 0 && errno == EINTR) {
    }
    close(ready[0]);
  }
  ~PeerChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  PeerChild(const PeerChild&) = delete;
  PeerChild& operator=(const PeerChild&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

}  // namespace hangwatch::testing

#endif  // HANGWATCH_TESTS_CAUSE_PEER_CHILD_H_
