#include "hangwatch_asio.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

#include "hangwatch/context.h"
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

// What each handler invocation under way on this thread said it dispatches, outermost first
// (a nested one's is restored to its outer's when it ends); deeper ones are not kept.
struct Told {
  const char* source = nullptr;
  const void* callback = nullptr;
};
constexpr int kToldDepth = 8;
thread_local Told t_told[kToldDepth];
thread_local Told t_current;  // what the pass says now

void Tell(const Told& told) noexcept {
  t_current = told;
  SetPassSource(told.source, told.callback);
}

// ASIO_HANDLER_LOCATION's text, one buffer per nested location scope of the thread.
constexpr int kLocationDepth = 4;
constexpr size_t kLocationBytes = 128;
thread_local int t_location_depth = 0;
thread_local char t_locations[kLocationDepth][kLocationBytes];

// "dir/file.cc", 123, "function" -> "file.cc:123 function", cut to fit `out`.
void FormatLocation(const char* file, int line, const char* function, char* out, size_t size) {
  const char* slash = std::strrchr(file != nullptr ? file : "", '/');
  const char* base = slash != nullptr ? slash + 1 : (file != nullptr ? file : "");
  size_t n = 0;
  auto put = [&](char c) {
    if (n + 1 < size) out[n++] = c;
  };
  for (const char* p = base; *p != '\0'; ++p) put(*p);
  put(':');
  char digits[12];
  int count = 0;
  unsigned value = line < 0 ? 0u : static_cast<unsigned>(line);
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && count < 12);
  while (count > 0) put(digits[--count]);
  if (function != nullptr && *function != '\0') {
    put(' ');
    for (const char* p = function; *p != '\0'; ++p) put(*p);
  }
  out[n] = '\0';
}

}  // namespace

namespace asio_tracking {

void HandlerBegin(const char* source, const void* callback) noexcept {
  const int depth = t_depth++;
  if (depth == 0) {
    const TaskPool* pool = PoolOfThisThread();
    if (pool == nullptr) return;
    new (t_task) TaskScope(*pool);  // registers the thread at its first handler
    t_in_task = true;
  } else if (!t_in_task) {
    return;  // inside a handler of an unwatched io_context
  }
  // Inside another handler, the pass goes on: this handler is what it dispatches now.
  const Told told{source, callback};
  if (depth < kToldDepth) t_told[depth] = told;
  Tell(told);
}

void HandlerEnd() noexcept {
  const int depth = --t_depth;
  if (!t_in_task) return;
  if (depth > 0) {
    if (depth - 1 < kToldDepth) Tell(t_told[depth - 1]);
    return;
  }
  t_in_task = false;
  std::launder(reinterpret_cast<TaskScope*>(t_task))->~TaskScope();
}

Location::Location(const char* file, int line, const char* function) noexcept {
  if (!t_in_task || t_location_depth >= kLocationDepth) return;
  char* text = t_locations[t_location_depth++];
  FormatLocation(file, line, function, text, kLocationBytes);
  told_ = true;
  outer_source_ = t_current.source;
  outer_callback_ = t_current.callback;
  Tell({text, t_current.callback});
}

Location::~Location() {
  if (!told_) return;
  --t_location_depth;
  // The handler that made this location may have ended inside the scope (not in asio's use).
  if (t_in_task) Tell({outer_source_, outer_callback_});
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
