#include "hangwatch_asio.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>

#include "hangwatch/hangwatch.h"

namespace hangwatch {
namespace {

// The watched io_contexts. Written under g_mutex by AsioWatch; read without a lock by the
// threads that run handlers, which look for the one they are running.
struct Entry {
  std::atomic<asio::io_context*> context{nullptr};
  std::atomic<const TaskPool*> pool{nullptr};
};
std::mutex g_mutex;
std::array<Entry, AsioWatch::kMaxWatchedContexts> g_entries;
// Bumped whenever an entry changes: a thread's cached answer is only good for its generation.
std::atomic<uint64_t> g_generation{1};

// Per thread: how deep in handler invocations it is, the pass it runs, and which watched
// io_context it last ran a handler of.
thread_local int t_depth = 0;
thread_local bool t_in_task = false;
alignas(TaskScope) thread_local unsigned char t_task[sizeof(TaskScope)];
thread_local uint64_t t_cached_generation = 0;
thread_local asio::io_context* t_cached_context = nullptr;
thread_local const TaskPool* t_cached_pool = nullptr;

bool RunsHere(asio::io_context* context) {
  return context != nullptr && context->get_executor().running_in_this_thread();
}

// The pool of the watched io_context whose run() (or poll()) this thread is in; nullptr when
// none.
const TaskPool* PoolOfThisThread() {
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (generation == t_cached_generation && RunsHere(t_cached_context)) return t_cached_pool;
  for (Entry& e : g_entries) {
    asio::io_context* context = e.context.load(std::memory_order_acquire);
    if (RunsHere(context)) {
      t_cached_generation = generation;
      t_cached_context = context;
      t_cached_pool = e.pool.load(std::memory_order_relaxed);
      return t_cached_pool;
    }
  }
  return nullptr;
}

}  // namespace

namespace asio_tracking {

void HandlerBegin() noexcept {
  if (t_depth++ > 0) return;  // inside another handler: its pass goes on
  const TaskPool* pool = PoolOfThisThread();
  if (pool == nullptr) return;
  new (t_task) TaskScope(*pool);  // registers the thread at its first handler
  t_in_task = true;
}

void HandlerEnd() noexcept {
  if (--t_depth > 0 || !t_in_task) return;
  t_in_task = false;
  std::launder(reinterpret_cast<TaskScope*>(t_task))->~TaskScope();
}

}  // namespace asio_tracking

AsioWatch::AsioWatch(asio::io_context& context, std::string_view role,
                     std::chrono::milliseconds threshold)
    : role_(role.substr(0, std::min(role.size(), kMaxRoleBytes))), pool_(role_, threshold) {
  std::lock_guard lock(g_mutex);
  int free_slot = -1;
  for (int i = 0; i < kMaxWatchedContexts; ++i) {
    asio::io_context* c = g_entries[static_cast<size_t>(i)].context.load();
    if (c == &context) return;
    if (c == nullptr && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return;
  Entry& e = g_entries[static_cast<size_t>(free_slot)];
  e.pool.store(&pool_, std::memory_order_relaxed);
  e.context.store(&context, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  slot_ = free_slot;
}

AsioWatch::~AsioWatch() {
  if (slot_ < 0) return;
  std::lock_guard lock(g_mutex);
  g_entries[static_cast<size_t>(slot_)].context.store(nullptr, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace hangwatch
