// unwind/thread_pointer.h: glibc's pthread_self() from a thread's thread pointer, checked
// against this libc in this process (it also runs in the aarch64 cross check, under qemu), and
// against the thread pointer ptrace_capture reads from another process's threads.
#include "unwind/thread_pointer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

#include "unwind/ptrace_capture.h"

namespace hangwatch::unwind {
namespace {

// sizeof(struct pthread) as this process's glibc exports it; 0 when it does not.
uint64_t GlibcPthreadSize() {
  const void* p = dlsym(RTLD_DEFAULT, kGlibcPthreadSizeSymbol);
  return p != nullptr ? *static_cast<const uint32_t*>(p) : 0;
}

uint64_t ThisThreadPointer() { return reinterpret_cast<uint64_t>(__builtin_thread_pointer()); }

uint64_t ThisPthread() { return static_cast<uint64_t>(pthread_self()); }

TEST(ThreadPointer, GlibcExportsItsPthreadSize) {
  // A struct pthread is over a kilobyte in every glibc that exports its size.
  EXPECT_GT(GlibcPthreadSize(), 1024u);
}

TEST(ThreadPointer, PthreadSelfOfThisThreadAndAnother) {
  const uint64_t size = GlibcPthreadSize();
  ASSERT_NE(size, 0u);
  EXPECT_EQ(PthreadSelfFromThreadPointer(ThisThreadPointer(), size), ThisPthread());
  uint64_t other_tp = 0;
  uint64_t other_self = 0;
  std::thread t([&] {
    other_tp = ThisThreadPointer();
    other_self = ThisPthread();
  });
  t.join();
  EXPECT_NE(other_self, ThisPthread());
  EXPECT_EQ(PthreadSelfFromThreadPointer(other_tp, size), other_self);
}

TEST(ThreadPointer, UnknownIsZero) {
  EXPECT_EQ(PthreadSelfFromThreadPointer(0, GlibcPthreadSize()), 0u);
#if defined(__aarch64__)
  EXPECT_EQ(PthreadSelfFromThreadPointer(ThisThreadPointer(), 0), 0u);
#endif
}

struct Reported {
  pid_t tid;
  uint64_t self;
};

// A child process whose main thread and a second thread write (tid, pthread_self()) to `fd`,
// then wait to be killed.
[[noreturn]] void ChildMain(int fd) {
  auto report = [fd] {
    const Reported r{static_cast<pid_t>(syscall(SYS_gettid)), ThisPthread()};
    if (write(fd, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) _exit(2);
  };
  std::thread([&] {
    report();
    for (;;) pause();
  }).detach();
  report();
  for (;;) pause();
}

TEST(ThreadPointer, PtraceCaptureReadsIt) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    ChildMain(fds[1]);
  }
  close(fds[1]);
  Reported r[2] = {};
  size_t got = 0;
  while (got < sizeof(r)) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(r) + got, sizeof(r) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  PtraceSnapshot snap;
  if (got == sizeof(r)) snap = CapturePtraceSnapshot(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(got, sizeof(r));
  if (snap.error != PtraceError::kOk) {
    GTEST_SKIP() << "no ptrace snapshot here (error " << static_cast<int>(snap.error)
                 << "; an emulator?)";
  }
  const uint64_t size = GlibcPthreadSize();
  int matched = 0;
  for (const Reported& want : r) {
    for (const PtraceThread& t : snap.threads) {
      if (t.tid != want.tid) continue;
      ASSERT_NE(t.thread_pointer, 0u) << t.tid;
      EXPECT_EQ(PthreadSelfFromThreadPointer(t.thread_pointer, size), want.self) << t.tid;
      ++matched;
    }
  }
  EXPECT_EQ(matched, 2);
}

}  // namespace
}  // namespace hangwatch::unwind
