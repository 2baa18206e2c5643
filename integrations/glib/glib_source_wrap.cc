#include "glib_source_wrap.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

#include "hangwatch/context.h"

namespace hangwatch::glib_sources {
namespace {

// GLib's own dispatch function of each wrapped type, published before its wrapper is; and
// g_source_get_name, published before any wrapper.
std::array<std::atomic<DispatchFunction>, kSourceTypeCount> g_dispatch{};
std::atomic<SourceNameFunction> g_source_name{nullptr};
std::atomic<SourceReadyTimeFunction> g_ready_time{nullptr};

// How late a timeout source's dispatch begins (ns) past the time it fell due; -1 when unknown.
int64_t LatenessNs(void* source) {
  const SourceReadyTimeFunction ready_time = g_ready_time.load(std::memory_order_relaxed);
  if (ready_time == nullptr) return -1;
  const int64_t due_us = ready_time(source);
  if (due_us < 0) return -1;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // GLib's monotonic time is this clock's
  const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  const int64_t late = now_ns - due_us * 1000;
  return late > 0 ? late : 0;
}

// Dispatches nested deeper than this (a callback that iterates the context itself) are told
// by their source's type, not by a copy of their name.
constexpr int kNamedDepth = 4;
constexpr size_t kNameBytes = 128;  // a name, NUL-terminated: longer ones are cut

// Per thread: the names of the dispatches under way, outermost first. A name is copied: the
// callback may rename or destroy its source, and the copy must outlive the watchdog's read.
thread_local int t_dispatch_depth = 0;
thread_local char t_names[kNamedDepth][kNameBytes];
thread_local const char* t_current_source = nullptr;
thread_local const void* t_current_callback = nullptr;

// Tells the pass that `source` dispatches, for the scope of its dispatch; then tells it again
// what the enclosing dispatch was (nothing, outside any: what follows in the pass is not this
// source's).
class DispatchScope {
 public:
  DispatchScope(void* source, const char* type_name, const void* callback,
                int64_t queued_ns) noexcept
      : outer_source_(t_current_source), outer_callback_(t_current_callback) {
    const int depth = t_dispatch_depth++;
    const char* name = g_source_name.load(std::memory_order_relaxed)(source);
    const char* text = type_name;
    if (name != nullptr && depth < kNamedDepth) {
      char* copy = t_names[depth];
      const size_t length = std::min(std::strlen(name), kNameBytes - 1);
      std::memcpy(copy, name, length);
      copy[length] = '\0';
      text = copy;
    }
    Tell(text, callback, queued_ns);
  }
  ~DispatchScope() {
    --t_dispatch_depth;
    Tell(outer_source_, outer_callback_, -1);
  }
  DispatchScope(const DispatchScope&) = delete;
  DispatchScope& operator=(const DispatchScope&) = delete;

 private:
  static void Tell(const char* source, const void* callback, int64_t queued_ns) noexcept {
    t_current_source = source;
    t_current_callback = callback;
    hangwatch::SetPassSource(source, callback, queued_ns);
  }
  const char* outer_source_;
  const void* outer_callback_;
};

template <int I>
int DispatchTold(void* source, void* callback, void* user_data) {
  const DispatchFunction dispatch =
      g_dispatch[static_cast<size_t>(I)].load(std::memory_order_acquire);
  // An unwatched thread: one thread-local load, then GLib's own function.
  if (hangwatch::internal::t_run_loop_state == nullptr) {
    return dispatch(source, callback, user_data);
  }
  DispatchScope scope(source, kSourceTypes[I].type_name, callback,
                      I == kTimeoutSourceType ? LatenessNs(source) : -1);
  return dispatch(source, callback, user_data);
}

template <size_t... I>
constexpr std::array<DispatchFunction, sizeof...(I)> MakeDispatchFunctions(
    std::index_sequence<I...>) {
  return {&DispatchTold<static_cast<int>(I)>...};
}

// `entry` is code of the object that holds `table` (GLib's own function, not a wrapper).
bool SameObject(const void* table, DispatchFunction entry) {
  Dl_info of_table{}, of_entry{};
  return dladdr(table, &of_table) != 0 &&
         dladdr(reinterpret_cast<const void*>(entry), &of_entry) != 0 &&
         of_table.dli_fbase == of_entry.dli_fbase;
}

}  // namespace

void WrapSourceDispatch(const SourceTables& tables) {
  static std::once_flag once;
  std::call_once(once, [&tables] {
    static constexpr auto kWrappers =
        MakeDispatchFunctions(std::make_index_sequence<kSourceTypeCount>());
    g_source_name.store(tables.source_name, std::memory_order_relaxed);
    g_ready_time.store(tables.ready_time, std::memory_order_relaxed);
    for (int i = 0; i < kSourceTypeCount; ++i) {
      SourceFuncsLayout* funcs = tables.funcs[i];
      if (funcs == nullptr) continue;
      DispatchFunction* entry = &funcs->dispatch;
      const DispatchFunction original = __atomic_load_n(entry, __ATOMIC_RELAXED);
      if (original == nullptr || !SameObject(funcs, original)) continue;
      g_dispatch[static_cast<size_t>(i)].store(original, std::memory_order_release);
      __atomic_store_n(entry, kWrappers[static_cast<size_t>(i)], __ATOMIC_RELEASE);
    }
  });
}

}  // namespace hangwatch::glib_sources
