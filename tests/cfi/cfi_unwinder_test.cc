// CfiUnwinder on real captures (SignalSampler: registers + 64 KiB stack copy) of threads
// stalled where a frame-pointer walk goes wrong: inside libc's qsort, inside std::sort and a
// callback of a library built without frame pointers, in a function's prologue. Also: the two
// methods agree on frame-pointer code, code without CFI, corrupt stacks, an unloaded module.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "symbols/cfi_unwinder.h"
#include "tests/cfi/cfi_test_util.h"
#include "tests/cfi/nofp_lib.h"
#include "tests/sanitizers.h"
#include "tests/unwind/target_thread.h"
#include "unwind/frame_walker.h"
#include "unwind/signal_sampler.h"

using hangwatch::symbols::CfiUnwinder;
using hangwatch::symbols::FrameMethod;
using hangwatch::testing::EuStackPcs;
using hangwatch::testing::HasChain;
using hangwatch::testing::UnwindCapture;
using hangwatch::testing::Unwound;
using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::CaptureStatusName;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::testing::SpinControl;
using hangwatch::unwind::testing::TargetThread;

namespace {
SpinControl* g_spin = nullptr;  // the control of the running target

__attribute__((noinline)) void SignalReadyOutOfLine() {
  g_spin->SignalReady();
  asm volatile("" ::: "memory");
}

// Signals ready once, then spins until the test stops the target. Not a leaf (it calls), so it
// has a frame record.
__attribute__((noinline)) void SpinHere() {
  SignalReadyOutOfLine();
  while (!__atomic_load_n(g_spin->stop_flag(), __ATOMIC_ACQUIRE)) {
    asm volatile("" ::: "memory");
  }
}

// The same as a leaf: gcc gives it no frame record even with -mno-omit-leaf-frame-pointer, so
// the frame-pointer walk from inside it skips its caller.
__attribute__((noinline)) void SpinLeaf() {
  g_spin->SignalReady();
  while (!__atomic_load_n(g_spin->stop_flag(), __ATOMIC_ACQUIRE)) {
    asm volatile("" ::: "memory");
  }
}
}  // namespace

// Exported (ENABLE_EXPORTS) so that dladdr names them.
extern "C" {
__attribute__((noinline)) int cfi_qsort_compare(const void* a, const void* b) {
  SpinHere();
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
__attribute__((noinline)) void cfi_qsort_caller() {
  int values[8] = {5, 3, 7, 1, 8, 2, 6, 4};
  qsort(values, 8, sizeof(int), cfi_qsort_compare);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) bool cfi_sort_less(int a, int b) {
  SpinHere();
  return a < b;
}
__attribute__((noinline)) void cfi_sort_caller() {
  std::vector<int> values = {5, 3, 7, 1, 8, 2, 6, 4, 9, 0, 11, 10, 12, 15, 14, 13, 16, 17};
  nofp_sort(values.data(), static_cast<int>(values.size()), cfi_sort_less);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_callback(void*) {
  SpinHere();
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_invoke_caller() {
  nofp_invoke(cfi_callback, nullptr, 3);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_fp_level(int depth) {
  if (depth == 0) {
    SpinHere();
  } else {
    cfi_fp_level(depth - 1);
  }
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_leaf_caller() {
  SpinLeaf();
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_thread_body(void (*fn)()) {
  fn();
  asm volatile("" ::: "memory");
}

bool g_asm_ready = false;

#if defined(__x86_64__)
// Spins on *flag (rdi) BEFORE pushing its frame record: interrupted there, rbp still holds the
// caller's frame, so a frame-pointer walk skips the caller. The CFI says so.
void cfi_prologue_spin(const bool* flag, bool* ready);
// A frame-pointer function with no CFI at all: spins after setting up its frame record.
void cfi_no_cfi_spin(const bool* flag, bool* ready);
asm(R"(
  .text
  .globl cfi_prologue_spin
  .type cfi_prologue_spin, @function
cfi_prologue_spin:
  .cfi_startproc
  movb $1, (%rsi)
1:
  pause
  movzbl (%rdi), %eax
  testl %eax, %eax
  je 1b
  pushq %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  popq %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size cfi_prologue_spin, .-cfi_prologue_spin

  .globl cfi_no_cfi_spin
  .type cfi_no_cfi_spin, @function
cfi_no_cfi_spin:
  pushq %rbp
  movq %rsp, %rbp
  movb $1, (%rsi)
2:
  pause
  movzbl (%rdi), %eax
  testl %eax, %eax
  je 2b
  popq %rbp
  ret
  .size cfi_no_cfi_spin, .-cfi_no_cfi_spin
)");
__attribute__((noinline)) void cfi_prologue_caller() {
  cfi_prologue_spin(g_spin->stop_flag(), &g_asm_ready);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void cfi_no_cfi_caller() {
  cfi_no_cfi_spin(g_spin->stop_flag(), &g_asm_ready);
  asm volatile("" ::: "memory");
}
#endif
}  // extern "C"

namespace {

class CfiUnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HW_TEST_SKIP_UNDER_TSAN();
    SignalSamplerOptions so;
    so.max_stack_bytes = 64 * 1024;
    so.timeout = std::chrono::seconds(2);  // a busy shared machine may delay the answer
    std::string error;
    sampler_ = SignalSampler::Create(so, &error);
    ASSERT_NE(sampler_, nullptr) << error;
    auto unwinder = CfiUnwinder::ForSelf();
    ASSERT_TRUE(unwinder.ok()) << unwinder.status();
    unwinder_ = std::move(*unwinder);
  }

  // Runs fn on a target thread (through cfi_thread_body), waits until it spins where the test
  // wants it, captures it into capture_ and unwinds. The thread keeps spinning until Stop().
  Unwound CaptureWhile(void (*fn)(), bool wait_asm_ready = false) {
    g_asm_ready = false;
    target_ = std::make_unique<TargetThread>([fn, wait_asm_ready](TargetThread* t) {
      g_spin = t;
      if (wait_asm_ready) {
        // The asm functions signal through g_asm_ready; forward it.
        std::thread([t] {
          while (!__atomic_load_n(&g_asm_ready, __ATOMIC_ACQUIRE)) {
          }
          t->SignalReady();
        }).detach();
      }
      cfi_thread_body(fn);
    });
    const auto& info = target_->WaitReady();
    const CaptureStatus st = sampler_->Capture(info, &capture_);
    EXPECT_EQ(st, CaptureStatus::kOk) << CaptureStatusName(st);
    const absl::Status refreshed = unwinder_->Refresh(false);
    EXPECT_TRUE(refreshed.ok()) << refreshed;
    return UnwindCapture(*unwinder_, capture_);
  }

  void Stop() {
    if (target_ != nullptr) target_->Stop();
    target_.reset();
  }
  void TearDown() override { Stop(); }

  std::unique_ptr<SignalSampler> sampler_;
  std::unique_ptr<CfiUnwinder> unwinder_;
  std::unique_ptr<TargetThread> target_;
  CaptureBuffer capture_{256, 64 * 1024};
};

TEST_F(CfiUnwinderTest, QsortComparatorShowsItsCallers) {
  Unwound u = CaptureWhile(cfi_qsort_caller);
  EXPECT_TRUE(HasChain(u.names, {"cfi_qsort_compare", "cfi_qsort_caller", "cfi_thread_body"}))
      << u.ToString();
  // libc's qsort has no frame records: its frames come from CFI.
  EXPECT_NE(std::count(u.methods.begin(), u.methods.end(), FrameMethod::kCfi), 0) << u.ToString();

  // eu-stack, on the same (still spinning) state: the same callers above the spinning leaf.
  std::string why;
  std::vector<uintptr_t> eu = EuStackPcs(target_->info().tid, &why);
  if (eu.empty()) GTEST_SKIP() << why;
  // Find the frame of cfi_qsort_compare's caller in both and compare from there outward.
  const size_t n = std::min(u.pcs.size(), eu.size());
  ASSERT_GE(n, 4u) << u.ToString();
  size_t matched = 0;
  for (size_t i = 2; i < n; ++i) {  // 0 (spin pc) and 1 (in SpinHere's caller) may move
    if (eu[i] == u.pcs[i] || eu[i] + 1 == u.pcs[i]) ++matched;
  }
  EXPECT_EQ(matched, n - 2) << "ours:\n" << u.ToString();
}

TEST_F(CfiUnwinderTest, StdSortInLibraryWithoutFramePointers) {
  Unwound u = CaptureWhile(cfi_sort_caller);
  EXPECT_TRUE(
      HasChain(u.names, {"cfi_sort_less", "nofp_sort", "cfi_sort_caller", "cfi_thread_body"}))
      << u.ToString();
}

TEST_F(CfiUnwinderTest, CallbackFromLibraryWithoutFramePointers) {
  Unwound u = CaptureWhile(cfi_invoke_caller);
  EXPECT_TRUE(
      HasChain(u.names, {"cfi_callback", "nofp_invoke", "cfi_invoke_caller", "cfi_thread_body"}))
      << u.ToString();
  // The frame-pointer walk alone loses the library's caller (it is what CFI is for).
  Unwound fp;
  for (size_t i = 0; i < capture_.num_frames; ++i) {
    fp.names.push_back(hangwatch::testing::NameOf(capture_.frames()[i], i > 0));
  }
  EXPECT_FALSE(HasChain(fp.names, {"cfi_callback", "nofp_invoke", "cfi_invoke_caller"}));
}

#if defined(__x86_64__)
TEST_F(CfiUnwinderTest, FunctionInterruptedInItsPrologueShowsItsCaller) {
  Unwound u = CaptureWhile(cfi_prologue_caller, /*wait_asm_ready=*/true);
  ASSERT_FALSE(u.names.empty());
  EXPECT_EQ(u.names[0], "cfi_prologue_spin") << u.ToString();
  EXPECT_TRUE(HasChain(u.names, {"cfi_prologue_spin", "cfi_prologue_caller", "cfi_thread_body"}))
      << u.ToString();
  // The frame-pointer walk skips the caller here.
  std::vector<std::string> fp;
  for (size_t i = 0; i < capture_.num_frames; ++i) {
    fp.push_back(hangwatch::testing::NameOf(capture_.frames()[i], i > 0));
  }
  EXPECT_FALSE(HasChain(fp, {"cfi_prologue_spin", "cfi_prologue_caller"}));
}

TEST_F(CfiUnwinderTest, CodeWithoutCfiFallsBackToFramePointers) {
  Unwound u = CaptureWhile(cfi_no_cfi_caller, /*wait_asm_ready=*/true);
  EXPECT_TRUE(HasChain(u.names, {"cfi_no_cfi_spin", "cfi_no_cfi_caller", "cfi_thread_body"}))
      << u.ToString();
  ASSERT_GE(u.methods.size(), 2u);
  EXPECT_EQ(u.methods[1], FrameMethod::kFramePointer) << u.ToString();
}
#endif

void FpChain() { cfi_fp_level(6); }

TEST_F(CfiUnwinderTest, FramePointersAndCfiAgreeOnFramePointerCode) {
  CaptureWhile(FpChain);
  Unwound hybrid = UnwindCapture(*unwinder_, capture_, CfiUnwinder::Mode::kHybrid);
  Unwound cfi = UnwindCapture(*unwinder_, capture_, CfiUnwinder::Mode::kCfiOnly);
  // The capture-time frame-pointer walk, frame by frame, against CFI, up to the thread body
  // (outside it, std::thread's frames may lack frame records).
  ASSERT_GE(capture_.num_frames, 10u);
  const size_t n = 9;
  ASSERT_GE(cfi.pcs.size(), n) << cfi.ToString();
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(capture_.frames()[i], cfi.pcs[i]) << "frame " << i << "\n" << cfi.ToString();
  }
  EXPECT_EQ(hybrid.pcs, cfi.pcs) << hybrid.ToString() << "vs\n" << cfi.ToString();
  // The hybrid used the cheap step for the frame-pointer frames above frame 1 (frame 0 -> 1 is
  // always CFI).
  EXPECT_GE(std::count(hybrid.methods.begin(), hybrid.methods.end(), FrameMethod::kFramePointer), 7)
      << hybrid.ToString();
  EXPECT_TRUE(
      HasChain(hybrid.names, {"cfi_fp_level", "cfi_fp_level", "cfi_fp_level", "cfi_thread_body"}));
}

TEST_F(CfiUnwinderTest, LeafWithoutFrameRecordShowsItsCaller) {
  Unwound u = CaptureWhile(cfi_leaf_caller);
  EXPECT_TRUE(HasChain(u.names, {"cfi_leaf_caller", "cfi_thread_body"})) << u.ToString();
  ASSERT_GE(u.names.size(), 2u);
  EXPECT_EQ(u.names[1], "cfi_leaf_caller") << u.ToString();
  std::vector<std::string> fp;
  for (size_t i = 0; i < capture_.num_frames; ++i) {
    fp.push_back(hangwatch::testing::NameOf(capture_.frames()[i], i > 0));
  }
#if !HW_TEST_ASAN
  // (Under ASan the compiler gives the leaf a frame record, and the frame-pointer walk sees the
  // caller.)
  EXPECT_FALSE(HasChain(fp, {"cfi_leaf_caller"})) << "the compiler gave SpinLeaf a frame record";
#endif
}

TEST_F(CfiUnwinderTest, CorruptStackCopyEndsTheWalkCleanly) {
  CaptureWhile(FpChain);
  Stop();
  std::mt19937_64 rng(42);
  const size_t words = capture_.stack_size / sizeof(uintptr_t);
  ASSERT_GT(words, 0u);
  std::vector<unsigned char> original(capture_.stack_storage(),
                                      capture_.stack_storage() + capture_.stack_size);
  for (int round = 0; round < 300; ++round) {
    std::copy(original.begin(), original.end(), capture_.stack_storage());
    auto* w = reinterpret_cast<uintptr_t*>(capture_.stack_storage());
    // Overwrite a few words with noise, stack-looking pointers or code-looking addresses.
    for (int k = 0; k < 8; ++k) {
      const size_t at = rng() % std::min<size_t>(words, 512);
      switch (rng() % 3) {
        case 0:
          w[at] = rng();
          break;
        case 1:
          w[at] = capture_.stack_base + (rng() % capture_.stack_size);
          break;
        default:
          w[at] = capture_.regs.pc + (rng() % 4096);
          break;
      }
    }
    for (auto mode : {CfiUnwinder::Mode::kHybrid, CfiUnwinder::Mode::kCfiOnly}) {
      Unwound u = UnwindCapture(*unwinder_, capture_, mode);
      ASSERT_GE(u.pcs.size(), 1u);
      ASSERT_LE(u.pcs.size(), 256u);
      EXPECT_EQ(u.pcs[0], capture_.regs.pc);
    }
  }
  // No stack copy at all: only the pc, and CFI's idea of the caller if it needs no memory.
  CaptureBuffer empty(8, 0);
  empty.regs = capture_.regs;
  Unwound u = UnwindCapture(*unwinder_, empty);
  ASSERT_GE(u.pcs.size(), 1u);
  EXPECT_LE(u.pcs.size(), 2u) << u.ToString();
}

TEST_F(CfiUnwinderTest, ModuleUnloadedBetweenCaptureAndUnwindStopsCleanly) {
  void* lib = dlopen(CFI_DL_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  static void (*invoke)(void (*)(void*), void*, int) = nullptr;
  invoke = reinterpret_cast<void (*)(void (*)(void*), void*, int)>(dlsym(lib, "nofp_invoke"));
  ASSERT_NE(invoke, nullptr);
  Unwound before = CaptureWhile(+[] { invoke(cfi_callback, nullptr, 2); });
  EXPECT_TRUE(HasChain(before.names, {"cfi_callback", "nofp_invoke", "cfi_thread_body"}))
      << before.ToString();
  Stop();
  ASSERT_EQ(dlclose(lib), 0);
  // Stale module cache first (the unwinder has not refreshed), then refreshed.
  Unwound stale = UnwindCapture(*unwinder_, capture_);
  ASSERT_GE(stale.pcs.size(), 1u);
  const absl::Status refreshed = unwinder_->Refresh(false);
  ASSERT_TRUE(refreshed.ok()) << refreshed;
  Unwound after = UnwindCapture(*unwinder_, capture_);
  ASSERT_GE(after.pcs.size(), 1u);
  // The library's frames are gone from the module list: the walk ends at the callback's
  // caller (a return address into the unloaded library) instead of inventing frames.
  EXPECT_LT(after.pcs.size(), before.pcs.size()) << after.ToString();
  EXPECT_EQ(after.pcs[0], before.pcs[0]);
}

}  // namespace
