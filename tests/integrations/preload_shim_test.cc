// The shim's interposed calls, called directly (dlopen + dlsym on the shim, RTLD_LOCAL so this
// process's own calls still go to libc): same result and errno as libc on the main thread and
// on other threads, arming only from the main thread's first blocking wait.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>

#include "tests/sanitizers.h"

namespace {

using PollFn = int (*)(struct pollfd*, nfds_t, int);
using EpollWaitFn = int (*)(int, struct epoll_event*, int, int);
using SelectFn = int (*)(int, fd_set*, fd_set*, fd_set*, struct timeval*);

struct Shim {
  void* handle = dlopen(HANGWATCH_PRELOAD_LIB, RTLD_NOW | RTLD_LOCAL);
  PollFn poll = handle ? reinterpret_cast<PollFn>(dlsym(handle, "poll")) : nullptr;
  EpollWaitFn epoll_wait =
      handle ? reinterpret_cast<EpollWaitFn>(dlsym(handle, "epoll_wait")) : nullptr;
  SelectFn select = handle ? reinterpret_cast<SelectFn>(dlsym(handle, "select")) : nullptr;
};

const Shim& GetShim() {
  static const Shim shim;
  return shim;
}

// The shim's watchdog thread exists (this test process starts no agent of its own).
bool AgentThreadRunning() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "hangwatch") found = true;
  }
  closedir(d);
  return found;
}

// Calls `shim` and `libc` with the same arguments; both must return the same and leave errno
// the same (errno is preset to a sentinel to see that a successful call leaves it alone).
template <typename F, typename G>
void ExpectSame(F shim, G libc, const char* what) {
  errno = 4242;
  const int a = shim();
  const int errno_a = errno;
  errno = 4242;
  const int b = libc();
  const int errno_b = errno;
  EXPECT_EQ(a, b) << what;
  EXPECT_EQ(errno_a, errno_b) << what;
}

// libc's calls through pointers: the compiler may not reason about their arguments.
PollFn volatile g_libc_poll = ::poll;

void CheckAllCalls() {
  const Shim& s = GetShim();
  [[maybe_unused]] const PollFn libc_poll = g_libc_poll;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  struct pollfd readable = {fds[0], POLLIN, 0};
  ExpectSame([&] { return s.poll(&readable, 1, 10); }, [&] { return ::poll(&readable, 1, 10); },
             "readable pipe");
  EXPECT_EQ(readable.revents, POLLIN);
  struct pollfd writable_end = {fds[1], POLLIN, 0};
  ExpectSame([&] { return s.poll(&writable_end, 1, 0); },
             [&] { return ::poll(&writable_end, 1, 0); }, "zero timeout, nothing ready");
#if !HW_TEST_ASAN  // ASan's poll interceptor rejects these arguments itself
  ExpectSame([&] { return s.poll(&readable, 1u << 30, 0); },
             [&] { return libc_poll(&readable, 1u << 30, 0); }, "EINVAL");
  ExpectSame([&] { return s.poll(reinterpret_cast<pollfd*>(8), 1, 0); },
             [&] { return libc_poll(reinterpret_cast<pollfd*>(8), 1, 0); }, "EFAULT");
#endif
  struct epoll_event ev[2];
  ExpectSame([&] { return s.epoll_wait(-1, ev, 2, 0); }, [&] { return ::epoll_wait(-1, ev, 2, 0); },
             "epoll EBADF");
  ExpectSame([&] { return s.select(-1, nullptr, nullptr, nullptr, nullptr); },
             [&] { return ::select(-1, nullptr, nullptr, nullptr, nullptr); }, "select EINVAL");
  struct timeval tv = {0, 1000};
  ExpectSame([&] { return s.select(0, nullptr, nullptr, nullptr, &tv); },
             [&] {
               tv = {0, 1000};
               return ::select(0, nullptr, nullptr, nullptr, &tv);
             },
             "select timeout");
  close(fds[0]);
  close(fds[1]);
}

TEST(PreloadShim, ExportsTheInterposedCalls) {
  const Shim& s = GetShim();
  ASSERT_NE(s.handle, nullptr) << dlerror();
  EXPECT_NE(s.poll, nullptr);
  EXPECT_NE(s.epoll_wait, nullptr);
  EXPECT_NE(s.select, nullptr);
  for (const char* name : {"ppoll", "pselect", "epoll_pwait", "epoll_pwait2", "__poll_chk",
                           "Tcl_WaitForEvent", "pthread_join"}) {
    EXPECT_NE(dlsym(s.handle, name), nullptr) << name;
  }
  // Nothing of the agent leaks out of the shim.
  EXPECT_EQ(dlsym(s.handle, "_ZN9hangwatch5StartERKNS_6ConfigE"), nullptr);
  EXPECT_EQ(dlsym(s.handle, "_ZN9hangwatch8internal16g_run_loop_stateE"), nullptr);
}

TEST(PreloadShim, OtherThreadsPassThroughAndNeverArm) {
  ASSERT_NE(GetShim().poll, nullptr);
  std::thread t([] {
    CheckAllCalls();
    struct pollfd none = {-1, 0, 0};
    GetShim().poll(&none, 1, 5);  // a blocking wait, but not on the main thread
  });
  t.join();
  EXPECT_FALSE(AgentThreadRunning());
}

TEST(PreloadShim, MainThreadArmsAtItsFirstBlockingWaitAndKeepsResults) {
  ASSERT_NE(GetShim().poll, nullptr);
  struct pollfd none = {-1, 0, 0};
  GetShim().poll(&none, 1, 0);  // zero timeout: not a wait, the program is not in a loop yet
  EXPECT_FALSE(AgentThreadRunning());
  GetShim().poll(&none, 1, 5);
  EXPECT_TRUE(AgentThreadRunning());
  CheckAllCalls();  // armed: the same answers
}

}  // namespace
