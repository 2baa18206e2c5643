// The agent with its production sampling path (real watchdog, ProcFirstSampler, CFI over the
// stack copy): a main thread stalled in a libc function without frame pointers is reported with
// its caller, and one sleeping in nanosleep is read through /proc without a single EINTR.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hangwatch/hangwatch.h"
#include "tests/agent/e2e_util.h"
#include "tests/keep_frame.h"
#include "unwind/proc_blocked_reader.h"
#include "unwind/thread_capture.h"

namespace hangwatch {
namespace {

using testing::HangCollector;
using testing::StackMentions;
using testing::TestConfig;

std::atomic<int> g_eintr{0};
uint64_t g_base_samples = 0;
constexpr uint64_t kSamples = 15;

bool EnoughSamples() { return GetStats().samples >= g_base_samples + kSamples; }

HW_TEST_KEEP_FRAME int SpinningCompare(const void* a, const void* b) {
  while (!EnoughSamples()) {
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
HW_TEST_KEEP_FRAME void QsortCaller() {
  int values[4] = {3, 1, 2, 0};
  qsort(values, 4, sizeof(int), SpinningCompare);
}
// Sleeps of 75 ms: the first sample (at half the 100 ms threshold) finds the thread asleep,
// mid-sleep, not waking up.
HW_TEST_KEEP_FRAME void NanosleepCaller() {
  while (!EnoughSamples()) {
    timespec ts{0, 75 * 1000 * 1000};
    if (nanosleep(&ts, nullptr) != 0 && errno == EINTR) g_eintr.fetch_add(1);
  }
}

// Every frame says how it was found; frame 0 is the pc.
bool EveryFrameHasItsMethod(const Stack& s) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const FrameMethod m = s.frames[i].method;
    if (m == FrameMethod::kUnknown || (i == 0) != (m == FrameMethod::kPc)) return false;
  }
  return !s.frames.empty();
}
bool AnyFrameBy(const HangRecord& h, FrameMethod m) {
  for (const Stack& s : h.stacks) {
    for (const Frame& f : s.frames) {
      if (f.method == m) return true;
    }
  }
  return false;
}
// The share of successful samples taken with `m` (0 without any).
// The samples (timeline entries with a stack) taken by `m`; *all: every sample.
size_t SamplesBy(const HangRecord& h, SampleMethod m, size_t* all = nullptr) {
  size_t samples = 0, by = 0;
  for (const TimelineEntry& t : h.timeline) {
    if (t.stack < 0) continue;
    ++samples;
    if (t.method == m) ++by;
  }
  if (all != nullptr) *all = samples;
  return by;
}
double ShareOfSamplesBy(const HangRecord& h, SampleMethod m) {
  size_t samples = 0;
  const size_t by = SamplesBy(h, m, &samples);
  return samples > 0 ? static_cast<double>(by) / static_cast<double>(samples) : 0;
}

// Whether some stack's first sample (the one whose frames the stack keeps) was taken by `m`.
bool FirstSampleOfSomeStackBy(const HangRecord& h, SampleMethod m) {
  std::vector<bool> seen(h.stacks.size());
  for (const TimelineEntry& t : h.timeline) {
    if (t.stack < 0 || static_cast<size_t>(t.stack) >= seen.size() || seen[t.stack]) continue;
    seen[t.stack] = true;
    if (t.method == m) return true;
  }
  return false;
}

// The hang's stacks, a frame a line (symbol and how it was found), for a failure's message.
std::string StacksText(const HangRecord& h) {
  std::string out;
  for (const Stack& s : h.stacks) {
    out += "stack (" + std::to_string(s.count) + " samples):\n";
    for (const Frame& f : s.frames) {
      out += "  " + (f.symbol.empty() ? f.module : f.symbol) + " [" + FrameMethodName(f.method) +
             "]\n";
    }
  }
  return out;
}

// Within the 12 innermost frames: the comparator spins in GetStats(), which may add frames of its
// own above it (the thread registry's count, under qemu a sample lands there most of the time).
bool AnyStackMentions(const HangRecord& h, const char* name) {
  for (const Stack& s : h.stacks) {
    if (StackMentions(s, name, 12)) return true;
  }
  return false;
}

class CfiE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // TestConfig() turns the stack copy off (timing tests); CFI needs it: the default size.
    Config c = TestConfig();
    c.stack_copy_bytes = Config().stack_copy_bytes;
    ASSERT_GT(c.stack_copy_bytes, 0u) << "CFI needs the stack copy";
    ASSERT_TRUE(Start(c).ok());
    g_base_samples = GetStats().samples;
  }
  void TearDown() override { Stop(); }
};

TEST_F(CfiE2eTest, StallInQsortComparatorShowsTheCaller) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  HangCollector collector;
  {
    WorkScope pass;
    QsortCaller();
  }
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  ASSERT_FALSE(h.stacks.empty());
  EXPECT_TRUE(AnyStackMentions(h, "SpinningCompare"));
  // qsort (libc, no frame pointers) sits between the comparator and its caller: only CFI
  // finds the caller.
  EXPECT_TRUE(AnyStackMentions(h, "QsortCaller")) << StacksText(h);
  // ...and the record says so, frame by frame; the thread was running: signal samples.
  for (const Stack& s : h.stacks) EXPECT_TRUE(EveryFrameHasItsMethod(s));
  EXPECT_TRUE(AnyFrameBy(h, FrameMethod::kCfi));
  EXPECT_EQ(ShareOfSamplesBy(h, SampleMethod::kSignal), 1.0);
}

// Whether /proc can read a thread blocked in read(2) here; "" when it can, else why not. Under
// qemu-user, /proc/PID/task/TID/syscall reports the emulator's host registers, so the reader
// refuses them and only a signal (EINTR in nanosleep) could read the sleeping thread.
std::string WhyProcCannotReadBlockedThreads() {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::atomic<bool> registered{false};
  unwind::ThreadInfo info;
  std::thread blocked([&] {
    unwind::RegisterCurrentThread(&info);
    registered = true;
    char c;
    (void)!read(fds[0], &c, 1);
  });
  while (!registered) {
  }
  unwind::CaptureBuffer buffer(4, 4096);
  unwind::ProcReadStatus st = unwind::ProcReadStatus::kNotBlocked;
  // Until the thread is asleep in read and one copy is consistent (bounded).
  for (int i = 0; i < 2000; ++i) {
    st = unwind::ReadBlockedThread(info, &buffer);
    if (st == unwind::ProcReadStatus::kOk || st == unwind::ProcReadStatus::kError) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (void)!write(fds[1], "x", 1);
  blocked.join();
  close(fds[0]);
  close(fds[1]);
  if (st == unwind::ProcReadStatus::kOk) return "";
  return std::string("/proc could not read a thread blocked in read(2): ") +
         unwind::ProcReadStatusName(st);
}

TEST_F(CfiE2eTest, SleepingMainThreadIsReadWithoutEintr) {
  HANGWATCH_SKIP_STACK_SHAPE_UNDER_TSAN();
  if (const std::string why = WhyProcCannotReadBlockedThreads(); !why.empty()) {
    GTEST_SKIP() << why << " (e.g. qemu-user's /proc shows host registers); a signal would "
                 << "interrupt nanosleep";
  }
  HangCollector collector;
  g_eintr = 0;
  {
    WorkScope pass;
    NanosleepCaller();
  }
  ASSERT_TRUE(collector.WaitFor(1));
  const HangRecord h = collector.hangs()[0];
  // No read through /proc interrupts the sleep. A sample that found the thread awake between
  // two sleeps is taken by the signal, which can land just after the next nanosleep began:
  // that one EINTR is the signal's, and there can be no more of them than signal samples.
  EXPECT_LE(static_cast<size_t>(g_eintr.load()), SamplesBy(h, SampleMethod::kSignal));
  EXPECT_TRUE(AnyStackMentions(h, "NanosleepCaller"));
  // ...and the frame-pointer chain above it, found by scanning for NanosleepCaller's frame
  // record (fp is not known from /proc): the test body that called it.
  EXPECT_TRUE(AnyStackMentions(h, "SleepingMainThreadIsReadWithoutEintr"));
  // The record tells how: samples through /proc (all but those that found the thread awake
  // between two sleeps: those were interrupted, which a running thread does not notice); the
  // libc wrapper's caller by CFI, and the record found by the scan marked as such.
  EXPECT_GT(ShareOfSamplesBy(h, SampleMethod::kProc), 0.5);
  for (const Stack& s : h.stacks) EXPECT_TRUE(EveryFrameHasItsMethod(s));
  EXPECT_TRUE(AnyFrameBy(h, FrameMethod::kCfi));
  // A stack is stored once, its frames' methods as its first sample found them: the scan shows
  // in a stack first met by a /proc sample. (On a loaded machine the first sample can find the
  // thread awake, runnable between two sleeps: a signal sample, its frame pointer known, and
  // later /proc samples of the same stack add only to its count.)
  if (FirstSampleOfSomeStackBy(h, SampleMethod::kProc)) {
    EXPECT_TRUE(AnyFrameBy(h, FrameMethod::kFramePointerScan));
  } else {
    EXPECT_TRUE(AnyFrameBy(h, FrameMethod::kFramePointer));
  }
}

}  // namespace
}  // namespace hangwatch
