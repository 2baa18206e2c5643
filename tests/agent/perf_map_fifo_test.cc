// Another user plants a FIFO at /tmp/perf-PID.map. The agent reads that file
// on its watchdog thread when a hang has frames outside every module (JIT code): opening a FIFO
// without O_NONBLOCK waits for a writer that never comes, with the lock that fork() and Stop()
// take held. The hang must still be reported (its JIT frames unnamed), and fork() and Stop()
// must return.
//
// Each case runs in a forked child, bounded by the parent's waitpid with a deadline: a child
// that blocks is killed and the test fails instead of hanging the suite.
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::TestConfig;
using testing::WaitForChild;

HW_TEST_KEEP_FRAME void SpinUntilSampled() {
  const uint64_t base = GetStats().samples;
  while (GetStats().samples < base + 20) {
  }
}

// Code outside every module, as a JIT writes it: a frame (push rbp; mov rbp, rsp) that calls
// `target` and returns. Its return address is what the agent looks up in the perf map.
using JitFunction = void (*)();
JitFunction MakeJitTrampoline(void (*target)()) {
#if defined(__x86_64__)
  unsigned char code[] = {0x55,                                   // push rbp
                          0x48, 0x89, 0xe5,                       // mov rbp, rsp
                          0x48, 0xb8, 0,    0, 0, 0, 0, 0, 0, 0,  // movabs rax, target
                          0xff, 0xd0,                             // call rax
                          0x5d,                                   // pop rbp
                          0xc3};                                  // ret
  const uint64_t address = reinterpret_cast<uint64_t>(target);
  std::memcpy(code + 6, &address, sizeof(address));
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return nullptr;
  std::memcpy(page, code, sizeof(code));
  if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return nullptr;
  return reinterpret_cast<JitFunction>(page);
#else
  (void)target;
  return nullptr;
#endif
}

// Exit codes of the child.
constexpr int kOk = 0;
constexpr int kNoJit = 10;
constexpr int kNoFifo = 11;
constexpr int kStartFailed = 12;
constexpr int kHangNotReported = 13;
constexpr int kGrandchildFailed = 14;

int WatchedChild() {
  const JitFunction jit = MakeJitTrampoline(SpinUntilSampled);
  if (jit == nullptr) return kNoJit;
  const std::string map = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  unlink(map.c_str());
  if (mkfifo(map.c_str(), 0600) != 0) return kNoFifo;
  HangCollector hangs;
  Config c = TestConfig();
  c.threshold = 50ms;
  c.sample_interval = 2ms;
  c.check_interval = 2ms;
  if (!Start(c).ok()) return kStartFailed;
  BeginWork();
  jit();
  EndWork();
  // Bounded: a watchdog stuck on the FIFO never calls back.
  const bool reported = hangs.WaitFor(1, 10s);
  // fork() waits for the watchdog to be between two ticks (the lock it holds while working).
  const pid_t grandchild = fork();
  if (grandchild == 0) _exit(0);
  int status = 0;
  const bool grandchild_ok = grandchild > 0 && waitpid(grandchild, &status, 0) == grandchild &&
                             WIFEXITED(status) && WEXITSTATUS(status) == 0;
  Stop();
  if (!reported) return kHangNotReported;
  return grandchild_ok ? kOk : kGrandchildFailed;
}

TEST(PerfMapFifoTest, AFifoAtThePerfMapPathNeitherBlocksTheHangNorForkNorStop) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the JIT trampoline is x86-64 code";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(WatchedChild());
  const int code = WaitForChild(pid, 30s);
  unlink(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  EXPECT_NE(code, -1) << "the child blocked (the watchdog waits on the FIFO: fork() or Stop() "
                         "never returned)";
  EXPECT_NE(code, kHangNotReported) << "the hang was never reported";
  EXPECT_EQ(code, kOk);
}

}  // namespace
}  // namespace hangwatch
