// An unmodified event-loop program that switches from root to `nobody`, as servers' workers do,
// for the shim's privilege-drop tests (preload_privilege_drop_test.cc).
//
//   privilege_drop_fixture arm-then-drop      waits for events (the shim arms), switches user,
//                                             stalls 400 ms (a hang), waits, prints "stalling"
//                                             and stalls until killed (a hang left open)
//   privilege_drop_fixture drop-then-arm      switches user first (nginx's workers), then the same
//   privilege_drop_fixture fork-after-drop    switches user, then forks a child that waits,
//                                             stalls 400 ms, waits and exits 0 (its status is
//                                             the parent's)
//   privilege_drop_fixture close-all FILE     opens FILE (its own data), switches user, closes
//                                             every other descriptor but 0-2, puts FILE on the
//                                             freed numbers, then waits, stalls 400 ms, waits,
//                                             exits 0
//
// The switch is setgid, initgroups, setuid, in that order (nginx's). Each step prints a line on
// stdout ("dropped", "stalling", "done") so that the test follows along.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" __attribute__((noinline)) void StallTheMainThread(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

namespace {

void Say(const char* line) {
  std::printf("%s\n", line);
  std::fflush(stdout);
}

bool DropToNobody() {
  const passwd* pw = getpwnam("nobody");
  if (pw == nullptr) return false;
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  if (setgid(gid) != 0 || initgroups("nobody", gid) != 0 || setuid(uid) != 0) return false;
  Say("dropped");
  return true;
}

// Waits for events, stalls, waits: one hang of about `ms`.
void OnePass(int ms) {
  poll(nullptr, 0, 50);
  StallTheMainThread(ms);
  poll(nullptr, 0, 50);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  if (std::strcmp(mode, "arm-then-drop") == 0 || std::strcmp(mode, "drop-then-arm") == 0) {
    const bool arm_first = mode[0] == 'a';
    if (arm_first) poll(nullptr, 0, 50);
    if (!DropToNobody()) return 3;
    OnePass(400);
    Say("stalling");
    StallTheMainThread(60'000);
    return 0;
  }
  if (std::strcmp(mode, "fork-after-drop") == 0) {
    if (!DropToNobody()) return 3;
    const pid_t child = fork();
    if (child < 0) return 4;
    if (child == 0) {
      OnePass(400);
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 5;
    Say("done");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 6;
  }
  if (std::strcmp(mode, "close-all") == 0 && argc == 3) {
    constexpr int kData = 200;
    const int data = open(argv[2], O_WRONLY | O_APPEND);
    if (data < 0 || fcntl(data, F_DUPFD, kData) != kData) return 4;
    close(data);
    if (!DropToNobody()) return 3;
    for (int fd = 3; fd < 256; ++fd) {
      if (fd != kData) close(fd);
    }
    // The program's own file on every number the shim's descriptors had.
    for (int i = 0; i < 16; ++i) {
      if (fcntl(kData, F_DUPFD, 3) < 0) return 4;
    }
    OnePass(400);
    Say("done");
    return 0;
  }
  return 2;
}
