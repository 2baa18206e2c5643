#include "hangwatch_glib.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <tuple>
#include <utility>

#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"
#include "loop_thread_watch.h"

namespace hangwatch {
namespace {

// One watched context. A GPollFunc gets no user data, so each slot has a poll function of its
// own (WatchedPoll<I>) that knows its slot.
struct ContextSlot {
  GMainContext* context = nullptr;  // under g_slots_mutex
  // The poll function the watch replaced; called through. Written before the watched poll
  // function is installed (g_main_context_set_poll_func takes the context's lock, as the
  // iterating thread does to read it), so the poll function reads it after.
  std::atomic<GPollFunc> previous{nullptr};
  bool has_role = false;
  char role[kMaxRoleBytes + 1] = {};
  ThreadOptions options;
};

std::mutex g_slots_mutex;
std::array<ContextSlot, GMainContextWatch::kMaxWatchedContexts> g_slots;

// The slots this thread has polled: the destructor ends the pass only on such a thread.
thread_local uint64_t t_polled_slots = 0;

gint PollThrough(int index, GPollFD* fds, guint nfds, gint timeout) {
  ContextSlot& slot = g_slots[static_cast<size_t>(index)];
  // First: the slot's role and options were written before `previous` was published.
  GPollFunc previous = slot.previous.load(std::memory_order_acquire);
  t_polled_slots |= uint64_t{1} << index;
  if (slot.has_role) loop_thread::WatchLoopThread(slot.role, slot.options);
  hangwatch::AboutToWait();
  const gint result = previous(fds, nfds, timeout);
  hangwatch::WokeUp();  // relaxed stores: errno as the poll left it
  return result;
}

template <int I>
gint WatchedPoll(GPollFD* fds, guint nfds, gint timeout) {
  return PollThrough(I, fds, nfds, timeout);
}

template <size_t... I>
constexpr std::array<GPollFunc, sizeof...(I)> MakePollFunctions(std::index_sequence<I...>) {
  return {&WatchedPoll<static_cast<int>(I)>...};
}
constexpr auto kPollFunctions =
    MakePollFunctions(std::make_index_sequence<GMainContextWatch::kMaxWatchedContexts>());
static_assert(GMainContextWatch::kMaxWatchedContexts <= 64, "t_polled_slots is 64 bits");

// What a pass dispatches (hangwatch_glib.h, "What a pass dispatches"). GLib calls a source's
// dispatch function through its GSourceFuncs table; the tables of GLib's own source types are
// exported, so their dispatch entries are wrapped, once, for every context.
struct SourceType {
  GSourceFuncs* funcs;
  const char* name;  // an unnamed source's
  std::atomic<gboolean (*)(GSource*, GSourceFunc, gpointer)> dispatch{nullptr};  // GLib's own
};
std::array<SourceType, 6> g_source_types = {{
    {&g_timeout_funcs, "GTimeoutSource"},
    {&g_idle_funcs, "GIdleSource"},
    {&g_io_watch_funcs, "GIOWatch"},
    {&g_child_watch_funcs, "GChildWatchSource"},
    {&g_unix_signal_funcs, "GUnixSignalSource"},
    {&g_unix_fd_source_funcs, "GUnixFDSource"},
}};

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
  DispatchScope(GSource* source, const char* type_name, GSourceFunc callback) noexcept
      : outer_source_(t_current_source), outer_callback_(t_current_callback) {
    const int depth = t_dispatch_depth++;
    const char* name = g_source_get_name(source);
    const char* text = type_name;
    if (name != nullptr && depth < kNamedDepth) {
      char* copy = t_names[depth];
      const size_t length = std::min(std::strlen(name), kNameBytes - 1);
      std::memcpy(copy, name, length);
      copy[length] = '\0';
      text = copy;
    }
    Tell(text, reinterpret_cast<const void*>(callback));
  }
  ~DispatchScope() {
    --t_dispatch_depth;
    Tell(outer_source_, outer_callback_);
  }
  DispatchScope(const DispatchScope&) = delete;
  DispatchScope& operator=(const DispatchScope&) = delete;

 private:
  static void Tell(const char* source, const void* callback) noexcept {
    t_current_source = source;
    t_current_callback = callback;
    hangwatch::SetPassSource(source, callback);
  }
  const char* outer_source_;
  const void* outer_callback_;
};

template <int I>
gboolean DispatchTold(GSource* source, GSourceFunc callback, gpointer user_data) {
  SourceType& type = g_source_types[static_cast<size_t>(I)];
  const auto dispatch = type.dispatch.load(std::memory_order_acquire);
  // An unwatched thread: one thread-local load, then GLib's own function.
  if (hangwatch::internal::t_run_loop_state == nullptr)
    return dispatch(source, callback, user_data);
  DispatchScope scope(source, type.name, callback);
  return dispatch(source, callback, user_data);
}

template <size_t... I>
constexpr std::array<gboolean (*)(GSource*, GSourceFunc, gpointer), sizeof...(I)>
MakeDispatchFunctions(std::index_sequence<I...>) {
  return {&DispatchTold<static_cast<int>(I)>...};
}

// Wraps the dispatch entries of GLib's source types, once, for the life of the process (a
// dispatch under way on another thread may still be in a wrapper: they are never unwrapped).
void WrapSourceTypes() {
  static std::once_flag once;
  std::call_once(once, [] {
    static constexpr auto kDispatch = MakeDispatchFunctions(
        std::make_index_sequence<std::tuple_size_v<decltype(g_source_types)>>());
    for (size_t i = 0; i < g_source_types.size(); ++i) {
      SourceType& type = g_source_types[i];
      auto* entry = &type.funcs->dispatch;
      auto* original = __atomic_load_n(entry, __ATOMIC_RELAXED);
      if (original == nullptr) continue;
      type.dispatch.store(original, std::memory_order_release);
      // Another thread's GLib may read the entry meanwhile: one aligned pointer store.
      __atomic_store_n(entry, kDispatch[i], __ATOMIC_RELEASE);
    }
  });
}

// Takes a free slot for `context` and installs its poll function; -1 when the context is
// already watched or no slot is free.
int Claim(GMainContext* context, const char* role, size_t role_len, const ThreadOptions& options) {
  WrapSourceTypes();
  std::lock_guard lock(g_slots_mutex);
  int free_slot = -1;
  for (int i = 0; i < GMainContextWatch::kMaxWatchedContexts; ++i) {
    const GMainContext* c = g_slots[static_cast<size_t>(i)].context;
    if (c == context) return -1;
    if (c == nullptr && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return -1;
  ContextSlot& slot = g_slots[static_cast<size_t>(free_slot)];
  slot.context = g_main_context_ref(context);
  slot.has_role = role != nullptr;
  std::memset(slot.role, 0, sizeof slot.role);
  if (role != nullptr) std::memcpy(slot.role, role, role_len);
  slot.options = options;
  GPollFunc previous = g_main_context_get_poll_func(context);
  slot.previous.store(previous != nullptr ? previous : g_poll, std::memory_order_release);
  g_main_context_set_poll_func(context, kPollFunctions[static_cast<size_t>(free_slot)]);
  return free_slot;
}

GMainContext* OrDefault(GMainContext* context) {
  return context != nullptr ? context : g_main_context_default();
}

}  // namespace

GMainContextWatch::GMainContextWatch(GMainContext* context) {
  slot_ = Claim(OrDefault(context), nullptr, 0, {});
  if (slot_ >= 0) hangwatch::BeginWork();
}

GMainContextWatch::GMainContextWatch(GMainContext* context, std::string_view role,
                                     const ThreadOptions& options) {
  role = role.substr(0, std::min(role.size(), kMaxRoleBytes));
  slot_ = Claim(OrDefault(context), role.data(), role.size(), options);
}

GMainContextWatch::~GMainContextWatch() {
  if (slot_ < 0) return;
  bool has_role;
  {
    std::lock_guard lock(g_slots_mutex);
    ContextSlot& slot = g_slots[static_cast<size_t>(slot_)];
    // A poll under way on another thread keeps calling the previous function it already read
    // (`previous` stays valid: it is only replaced when the slot is claimed again).
    g_main_context_set_poll_func(slot.context, slot.previous.load(std::memory_order_relaxed));
    g_main_context_unref(slot.context);
    slot.context = nullptr;
    has_role = slot.has_role;
  }
  const uint64_t bit = uint64_t{1} << slot_;
  const bool polled_here = (t_polled_slots & bit) != 0;
  t_polled_slots &= ~bit;
  if (!has_role) {
    hangwatch::EndWork();  // as the first form always did: the thread that watches it
  } else if (polled_here) {
    loop_thread::UnwatchLoopThread();
  }
}

}  // namespace hangwatch
