// The public API of hangwatch/threads.h over the registry (thread_registry.h).
#include "agent/threads/thread_registry.h"
#include "hangwatch/hangwatch.h"
#include "hangwatch/threads.h"

namespace hangwatch {

namespace {

constexpr size_t kDefaultSlots = 64;  // Config::max_watched_threads's default

// Whether the calling thread may get a watch of its own: not when it has one, nor when it is
// the thread Start() watches as "main" (or, before any Start(), the thread that loaded us).
bool MayRegister() {
  std::atomic<uint64_t>* word = internal::t_run_loop_state;
  if (word == nullptr) return true;
  if (word != &internal::g_run_loop_state) return false;  // already watched
  return agent::MainThreadKnown() && !agent::OnMainThread();
}

// A pool thread's watch, made by its first TaskScope and destroyed when the thread exits.
thread_local ThreadWatch t_pool_watch;
__thread bool t_pool_registration_tried = false;

}  // namespace

ThreadWatch WatchThread(std::string_view role, const ThreadOptions& options) {
  if (!MayRegister()) return ThreadWatch();
  agent::ThreadRegistry& registry = agent::ThreadRegistry::Ensure(kDefaultSlots);
  const int slot = registry.Register(role, options);
  return slot >= 0 ? ThreadWatch(slot) : ThreadWatch();
}

ThreadWatch& ThreadWatch::operator=(ThreadWatch&& other) noexcept {
  if (this != &other) {
    Stop();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

void ThreadWatch::Stop() noexcept {
  if (slot_ < 0) return;
  if (agent::ThreadRegistry* registry = agent::ThreadRegistry::Get(); registry != nullptr) {
    registry->Release(slot_);
  }
  slot_ = -1;
}

namespace {
// Whether the calling thread is the one this watch watches.
bool OnWatchedThread(int slot) {
  agent::ThreadRegistry* registry = agent::ThreadRegistry::Get();
  return slot >= 0 && registry != nullptr &&
         internal::t_run_loop_state == &registry->slot(static_cast<size_t>(slot)).loop.state;
}
}  // namespace

void ThreadWatch::Pause() noexcept {
  if (OnWatchedThread(slot_)) EndWork();
}

void ThreadWatch::Resume() noexcept {
  if (OnWatchedThread(slot_)) BeginWork();
}

TaskScope::TaskScope(const TaskPool& pool) noexcept {
  if (internal::t_run_loop_state == nullptr && !t_pool_registration_tried) {
    t_pool_registration_tried = true;
    ThreadOptions options;
    options.threshold = pool.threshold();
    t_pool_watch = WatchThread(pool.name(), options);
  }
  BeginWork();
}

}  // namespace hangwatch
