#include "agent/threads/thread_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

namespace hangwatch::agent {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;

std::atomic<ThreadRegistry*> g_registry{nullptr};
// Written by Start() (serialized), read by WatchThread() on any thread.
std::atomic<bool> g_main_known{false};
pthread_t g_main_thread{};
std::mutex g_main_mu;

size_t BodyBytes() {
  return (sizeof(WatchedThreadSlot) + alignof(WatchedThreadSlot) - 1) / alignof(WatchedThreadSlot) *
         alignof(WatchedThreadSlot);
}

}  // namespace

ThreadRegistry& ThreadRegistry::Ensure(size_t capacity) {
  static std::once_flag once;
  std::call_once(once, [capacity] {
    g_registry.store(new ThreadRegistry(capacity), std::memory_order_release);
  });
  return *g_registry.load(std::memory_order_acquire);
}

ThreadRegistry* ThreadRegistry::Get() noexcept {
  return g_registry.load(std::memory_order_acquire);
}

ThreadRegistry::ThreadRegistry(size_t capacity)
    : capacity_(capacity),
      limit_(capacity),
      status_(new std::atomic<uint32_t>[std::max<size_t>(capacity, 1)]()),
      bodies_(nullptr),
      constructed_(new bool[std::max<size_t>(capacity, 1)]()) {
  if (capacity_ == 0) return;
  // Zero pages until a slot is claimed and constructed: unused slots take no memory.
  void* p = mmap(nullptr, capacity_ * BodyBytes(), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    capacity_ = 0;
    limit_.store(0, std::memory_order_relaxed);
    return;
  }
  bodies_ = static_cast<unsigned char*>(p);
}

WatchedThreadSlot& ThreadRegistry::slot(size_t i) noexcept {
  return *std::launder(reinterpret_cast<WatchedThreadSlot*>(bodies_ + i * BodyBytes()));
}

uint64_t ThreadRegistry::watched() const noexcept {
  uint64_t n = 0;
  for (size_t i = 0; i < capacity_; ++i) {
    const SlotStatus s = status(i);
    if (s == SlotStatus::kClaimed || s == SlotStatus::kActive) ++n;
  }
  return n;
}

int ThreadRegistry::Register(std::string_view role, const ThreadOptions& options) {
  const size_t limit = limit_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < limit; ++i) {
    uint32_t expected = static_cast<uint32_t>(SlotStatus::kFree);
    if (!status_[i].compare_exchange_strong(expected, static_cast<uint32_t>(SlotStatus::kClaimed),
                                            std::memory_order_acquire)) {
      continue;
    }
    if (!constructed_[i]) {
      new (bodies_ + i * BodyBytes()) WatchedThreadSlot();
      constructed_[i] = true;
    }
    WatchedThreadSlot& s = slot(i);
    if (!unwind::RegisterCurrentThread(&s.thread)) {
      status_[i].store(static_cast<uint32_t>(SlotStatus::kFree), std::memory_order_release);
      return -1;
    }
    const size_t n = std::min(role.size(), kMaxRoleBytes);
    std::memcpy(s.role, role.data(), n);
    s.role[n] = '\0';
    s.threshold_ns =
        static_cast<uint64_t>(std::max<int64_t>(options.threshold.count(), 0)) * kNsPerMs;
    s.sample_interval_ns =
        static_cast<uint64_t>(std::max<int64_t>(options.sample_interval.count(), 0)) * kNsPerMs;
    ++s.generation;
    // Idle, timed-mode bit set for good (internal/pass_timer.h: ThreadLoop); the pass count
    // goes on from the slot's last thread, so a pass's state is never seen twice.
    const uint64_t v = internal::RunLoopState(s.loop.state);
    s.loop.state.store(((v + 1) & ~uint64_t{1}) | internal::kRunLoopTimedBit,
                       std::memory_order_relaxed);
    // No label of the slot's last thread (one that stopped watching inside a ScopedLabel).
    s.loop.context.label_depth.store(0, std::memory_order_relaxed);
    internal::t_run_loop_state = &s.loop.state;
    status_[i].store(static_cast<uint32_t>(SlotStatus::kActive), std::memory_order_release);
    return static_cast<int>(i);
  }
  not_watched_.fetch_add(1, std::memory_order_relaxed);
  return -1;
}

void ThreadRegistry::Release(int index) noexcept {
  if (index < 0 || static_cast<size_t>(index) >= capacity_) return;
  WatchedThreadSlot& s = slot(static_cast<size_t>(index));
  const bool own = internal::t_run_loop_state == &s.loop.state;
  if (own) {
    EndWork();
    internal::t_run_loop_state = nullptr;
  }
  uint32_t expected = static_cast<uint32_t>(SlotStatus::kActive);
  status_[index].compare_exchange_strong(
      expected, static_cast<uint32_t>(own ? SlotStatus::kReleased : SlotStatus::kOrphaned),
      std::memory_order_release);
}

void ThreadRegistry::ForgetOtherThreadsAfterFork() noexcept {
  for (size_t i = 0; i < capacity_; ++i) {
    const SlotStatus s = status(i);
    if (s != SlotStatus::kActive && s != SlotStatus::kClaimed) continue;
    if (constructed_[i] && internal::t_run_loop_state == &slot(i).loop.state) continue;  // ours
    status_[i].store(static_cast<uint32_t>(SlotStatus::kOrphaned), std::memory_order_relaxed);
  }
}

void ThreadRegistry::Free(size_t index) noexcept {
  status_[index].store(static_cast<uint32_t>(SlotStatus::kFree), std::memory_order_release);
}

void SetMainThread(pthread_t thread) noexcept {
  std::lock_guard<std::mutex> lock(g_main_mu);
  g_main_thread = thread;
  g_main_known.store(true, std::memory_order_release);
}

bool MainThreadKnown() noexcept { return g_main_known.load(std::memory_order_acquire); }

bool OnMainThread() noexcept {
  if (!MainThreadKnown()) return false;
  std::lock_guard<std::mutex> lock(g_main_mu);
  return pthread_equal(g_main_thread, pthread_self()) != 0;
}

}  // namespace hangwatch::agent
