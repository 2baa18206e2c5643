// Out of address space on the watchdog thread: a process that lowers
// RLIMIT_AS to what it already uses makes every new mapping fail. The watchdog's CFI unwinding
// (libdwfl loads each module's ELF file and its .eh_frame lazily) then fails to allocate; that
// must end the sample (frame-pointer frames, or none), never the process.
//
// The watched process is a forked child, bounded by the parent's waitpid with a deadline.
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"
#include "tests/sanitizer_allocator.h"

namespace hangwatch {
namespace {

using namespace std::chrono_literals;
using testing::HangCollector;
using testing::TestConfig;
using testing::WaitForChild;

// Bytes of address space this process uses now (/proc/self/statm, first field).
size_t AddressSpaceBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

uint64_t g_base_samples = 0;
bool EnoughSamples() { return GetStats().samples >= g_base_samples + 20; }

// The hang: a busy qsort comparator, so that the samples stop inside libc (whose CFI the
// watchdog has not loaded yet: no hang was unwound before the limit).
HW_TEST_KEEP_FRAME int SpinningCompare(const void* a, const void* b) {
  while (!EnoughSamples()) {
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

constexpr int kStartFailed = 10;
constexpr int kNoLimit = 11;
constexpr int kHangNotClosed = 12;
constexpr int kWatchdogGone = 13;

void HangInQsort() {
  g_base_samples = GetStats().samples;
  int values[4] = {3, 1, 2, 0};
  BeginWork();
  qsort(values, 4, sizeof(int), SpinningCompare);
  EndWork();
}

int WatchedChild() {
  HangCollector hangs;
  Config c = TestConfig();
  c.threshold = 50ms;
  c.sample_interval = 2ms;
  c.check_interval = 2ms;
  c.stack_copy_bytes = 16 * 1024;  // CFI unwinding on the watchdog thread
  if (!Start(c).ok()) return kStartFailed;
  // From now on no new mapping fits (a little room for the malloc arenas that exist). The soft
  // limit only, so that it can be lifted again.
  rlimit saved;
  if (getrlimit(RLIMIT_AS, &saved) != 0) return kNoLimit;
  rlimit low = saved;
  low.rlim_cur = AddressSpaceBytes() + (1 << 20);
  if (setrlimit(RLIMIT_AS, &low) != 0) return kNoLimit;
  // A hang sampled and closed out of memory: reporting it is best effort (the sinks and this
  // test's callback need memory too), closing it is not.
  HangInQsort();
  if (!testing::WaitUntil([] { return GetStats().hangs >= 1; })) return kHangNotClosed;
  // With memory again, the watchdog is still there and reports the next hang.
  if (setrlimit(RLIMIT_AS, &saved) != 0) return kNoLimit;
  const size_t before = hangs.size();
  HangInQsort();
  const bool reported = hangs.WaitFor(before + 1, 10s);
  Stop();
  return reported ? 0 : kWatchdogGone;
}

TEST(OutOfMemoryTest, TheWatchdogSurvivesAnAddressSpaceLimit) {
#if defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
  GTEST_SKIP()
      << "the sanitizer's allocator aborts when a mapping fails (tests/sanitizer_allocator.h)";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(WatchedChild());
  const int code = WaitForChild(pid, 60s);
  EXPECT_NE(code, 128 + SIGSEGV) << "the watchdog crashed (SIGSEGV) out of memory";
  EXPECT_NE(code, 128 + SIGABRT) << "the watchdog aborted out of memory";
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace hangwatch
