// A capture allocates nothing: neither the handler on the target thread nor Capture() on the
// sampling thread. Counted by an allocator interposed in this test binary (glibc malloc family
// plain; the sanitizer allocator hooks under ASan/TSan, whose runtimes own malloc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "tests/sanitizer_allocator.h"
#include "tests/unwind/target_thread.h"
#include "unwind/signal_sampler.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0};
inline void Count() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}
}  // namespace

#if defined(HANGWATCH_TEST_SANITIZER_ALLOCATOR)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
void MallocHook(const volatile void*, size_t) { Count(); }
void FreeHook(const volatile void*) {}
bool InstallHooks() {
  return __sanitizer_install_malloc_and_free_hooks(&MallocHook, &FreeHook) != 0;
}
}  // namespace
#else
// Every allocation in the process goes through these (operator new calls malloc).
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) {
    return 12;  // ENOMEM
  }
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}  // extern "C"
namespace {
bool InstallHooks() { return true; }
}  // namespace
#endif

namespace {

using hangwatch::unwind::CaptureBuffer;
using hangwatch::unwind::CaptureStatus;
using hangwatch::unwind::CaptureStatusName;
using hangwatch::unwind::SignalSampler;
using hangwatch::unwind::SignalSamplerOptions;
using hangwatch::unwind::testing::TargetThread;

// The target spins without calling anything, so any allocation counted while armed comes from
// the handler or from Capture() (the only other running code is this test's own thread, which
// only calls Capture() while armed).
__attribute__((noinline, no_sanitize("thread"))) void SpinWithoutAllocating(TargetThread* t) {
  t->SignalReady();
  const bool* stop = t->stop_flag();
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
  }
}

TEST(CaptureAllocTest, TheCounterSeesAllocations) {
  ASSERT_TRUE(InstallHooks());
  g_allocations.store(0);
  g_counting.store(true);
  std::string* s = new std::string(100, 'x');  // heap: longer than the small-string buffer
  g_counting.store(false);
  delete s;
  EXPECT_GE(g_allocations.load(), 1u);
}

TEST(CaptureAllocTest, CaptureAllocatesNothingOnEitherThread) {
  HW_TEST_SKIP_UNDER_TSAN();
  ASSERT_TRUE(InstallHooks());
  std::string error;
  SignalSamplerOptions options;
  options.timeout = std::chrono::seconds(2);  // about allocations, not latency
  auto sampler = SignalSampler::Create(options, &error);
  ASSERT_NE(sampler, nullptr) << error;
  CaptureBuffer buffer(256, 64 * 1024);
  TargetThread target([](TargetThread* t) { SpinWithoutAllocating(t); });
  const auto& info = target.WaitReady();
  g_allocations.store(0);
  int ok = 0;
  // From the very first capture: lazily opened files, first-use initialisation and the like
  // count too.
  for (int i = 0; i < 1000; ++i) {
    g_counting.store(true);
    const CaptureStatus status = sampler->Capture(info, &buffer);
    g_counting.store(false);
    EXPECT_EQ(status, CaptureStatus::kOk) << "capture " << i << ": " << CaptureStatusName(status);
    ok += status == CaptureStatus::kOk ? 1 : 0;
  }
  EXPECT_EQ(ok, 1000);
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_GE(SignalSampler::stats().requests_answered, 1000u);
}

}  // namespace
