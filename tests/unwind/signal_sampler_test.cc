// SignalSampler on real threads: what one capture brings back.
#include "unwind/signal_sampler.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include <unistd.h>

#include "tests/unwind/target_thread.h"
#include "tests/unwind/test_functions.h"
#include "unwind/frame_walker.h"

using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::RegisterCurrentThread;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::ThreadInfo;
using hangwatch::unwind::testing::CodeRange;
using hangwatch::unwind::testing::RangeOfFunction;
using hangwatch::unwind::testing::SpinControl;
using hangwatch::unwind::testing::TargetThread;

// ---- a known chain: HwChainA -> HwChainB -> HwChainC -> HwChainD (spins) ----
extern "C" {

// The innermost function spins on a plain atomic builtin, uninstrumented even under TSan, so
// that the interrupted pc is inside it and not in a runtime helper. It keeps a local on its
// stack: GCC gives frameless leaf functions no frame record even with
// -mno-omit-leaf-frame-pointer, and a frame-pointer walk cannot see the caller of such a leaf
// (the return address sits at [sp] with nothing pointing to it; CFI unwinding of the copied
// stack recovers it later).
__attribute__((no_sanitize("thread"))) HW_TEST_KEEP_FRAME void HwChainD(SpinControl* t) {
  volatile char on_stack[16];
  on_stack[0] = 1;
  t->SignalReady();
  const bool* stop = t->stop_flag();
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
  }
  on_stack[1] = on_stack[0];
}
HW_TEST_KEEP_FRAME void HwChainC(SpinControl* t) {
  HwChainD(t);
  HW_TEST_NO_TAIL_CALL();
}
HW_TEST_KEEP_FRAME void HwChainB(SpinControl* t) {
  HwChainC(t);
  HW_TEST_NO_TAIL_CALL();
}
HW_TEST_KEEP_FRAME void HwChainA(SpinControl* t) {
  HwChainB(t);
  HW_TEST_NO_TAIL_CALL();
}

__attribute__((no_sanitize("thread"))) HW_TEST_KEEP_FRAME int HwRecurse(SpinControl* t, int depth) {
  if (depth == 0) {
    t->SignalReady();
    const bool* stop = t->stop_flag();
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
    }
    return 0;
  }
  const int result = HwRecurse(t, depth - 1);
  asm volatile("" : : "r"(result) : "memory");
  return result + 1;
}

}  // extern "C"

namespace {

// These tests are about what a capture contains, not latency: a generous timeout keeps them
// reliable on a loaded machine, where a spinning target can wait tens of ms for a CPU.
SignalSamplerOptions Generous() {
  SignalSamplerOptions options;
  options.timeout = std::chrono::seconds(2);
  return options;
}

std::unique_ptr<SignalSampler> MakeSampler(SignalSamplerOptions options = Generous()) {
  std::string error;
  auto sampler = SignalSampler::Create(options, &error);
  EXPECT_NE(sampler, nullptr) << error;
  return sampler;
}

TEST(SignalSamplerTest, CapturesKnownChainInOrder) {
  HW_TEST_SKIP_UNDER_TSAN();
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  const CodeRange ranges[] = {RangeOfFunction(&HwChainD), RangeOfFunction(&HwChainC),
                              RangeOfFunction(&HwChainB), RangeOfFunction(&HwChainA)};
  for (const CodeRange& r : ranges) {
    ASSERT_LT(r.lo, r.hi) << "symbol not found";
  }

  TargetThread target([](TargetThread* t) { HwChainA(t); });
  const ThreadInfo& info = target.WaitReady();
  CaptureBuffer buffer(256, 64 * 1024);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kOk);
    ASSERT_GE(buffer.num_frames, 4u);
    const uintptr_t* frames = buffer.frames();
    EXPECT_EQ(frames[0], buffer.regs.pc);
    // The interrupted pc is in HwChainD, then each caller's return address, in order.
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_TRUE(ranges[k].Contains(frames[k]))
          << "frame " << k << " = 0x" << std::hex << frames[k] << " not in [0x" << ranges[k].lo
          << ", 0x" << ranges[k].hi << ")";
    }
    EXPECT_FALSE(buffer.frames_truncated);
    // Registers and stack copy are consistent with the thread's stack.
    EXPECT_GE(buffer.regs.sp, info.stack.lo);
    EXPECT_LT(buffer.regs.sp, info.stack.hi);
    EXPECT_LE(buffer.stack_base, buffer.regs.sp);
    EXPECT_GT(buffer.stack_size, 0u);
    EXPECT_LE(buffer.stack_base + buffer.stack_size, info.stack.hi);
    EXPECT_GT(buffer.timestamp_ns, 0u);
    EXPECT_GT(buffer.cpu_time_ns, 0u);
    EXPECT_EQ(buffer.sched_state, 'R');
  }
  target.Stop();
}

// The agent's real target: the process's main thread (gtest runs tests on it), whose stack
// bounds come from /proc/self/maps rather than from a pthread stack block. A helper thread
// samples it while it sits in the known chain.
TEST(SignalSamplerTest, CapturesTheMainThread) {
  HW_TEST_SKIP_UNDER_TSAN();
  ASSERT_EQ(getpid(), gettid()) << "gtest is expected to run tests on the main thread";
  auto sampler = MakeSampler();
  ASSERT_NE(sampler, nullptr);
  ThreadInfo main_info;
  ASSERT_TRUE(RegisterCurrentThread(&main_info));
  EXPECT_EQ(main_info.tid, getpid());
  const auto here = reinterpret_cast<uintptr_t>(&main_info);
  EXPECT_TRUE(main_info.stack.Contains(here, sizeof(main_info)));

  const CodeRange ranges[] = {RangeOfFunction(&HwChainD), RangeOfFunction(&HwChainC),
                              RangeOfFunction(&HwChainB), RangeOfFunction(&HwChainA)};
  SpinControl control;
  int chains_seen = 0;
  size_t stack_bytes = 0;
  std::thread sampler_thread([&] {
    hangwatch::unwind::testing::SpinUntil(control.ready_flag());
    CaptureBuffer buffer(256, 64 * 1024);
    for (int i = 0; i < 50; ++i) {
      if (sampler->Capture(main_info, &buffer) != CaptureStatus::kOk || buffer.num_frames < 4) {
        continue;
      }
      bool chain = true;
      for (size_t k = 0; k < 4; ++k) {
        chain = chain && ranges[k].Contains(buffer.frames()[k]);
      }
      chains_seen += chain ? 1 : 0;
      stack_bytes = buffer.stack_size;
      EXPECT_TRUE(main_info.stack.Contains(buffer.regs.sp, 1));
      EXPECT_LE(buffer.stack_base + buffer.stack_size, main_info.stack.hi);
    }
    control.Stop();
  });
  HwChainA(&control);
  sampler_thread.join();
  EXPECT_EQ(chains_seen, 50);
  EXPECT_GT(stack_bytes, 0u);
}

TEST(SignalSamplerTest, DeepRecursionIsTruncatedAtMaxFrames) {
  HW_TEST_SKIP_UNDER_TSAN();
  SignalSamplerOptions options = Generous();
  options.max_frames = 128;
  options.max_stack_bytes = 16 * 1024;
  auto sampler = MakeSampler(options);
  ASSERT_NE(sampler, nullptr);
  const CodeRange recurse = RangeOfFunction(&HwRecurse);
  ASSERT_LT(recurse.lo, recurse.hi);

  TargetThread target([](TargetThread* t) { HwRecurse(t, 2000); });
  const ThreadInfo& info = target.WaitReady();
  CaptureBuffer buffer(256, 64 * 1024);
  ASSERT_EQ(sampler->Capture(info, &buffer), CaptureStatus::kOk);
  EXPECT_EQ(buffer.num_frames, options.max_frames);
  EXPECT_TRUE(buffer.frames_truncated);
  for (size_t k = 0; k < buffer.num_frames; ++k) {
    EXPECT_TRUE(recurse.Contains(buffer.frames()[k])) << "frame " << k;
  }
  // The stack copy stops at its bound too.
  EXPECT_EQ(buffer.stack_size, options.max_stack_bytes);

  // A caller buffer smaller than the sampler's bound gets a truncated prefix.
  CaptureBuffer small(16, 1024);
  ASSERT_EQ(sampler->Capture(info, &small), CaptureStatus::kOk);
  EXPECT_EQ(small.num_frames, 16u);
  EXPECT_TRUE(small.frames_truncated);
  EXPECT_EQ(small.stack_size, 1024u);
  target.Stop();
}

}  // namespace
