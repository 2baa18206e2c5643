#include "hangwatch_glib.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "glib_source_wrap.h"
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

// What a pass dispatches (hangwatch_glib.h, "What a pass dispatches"): the dispatch entries of
// GLib's own source types, wrapped once for every context (glib_source_wrap.h).
void WrapSourceTypes() {
  static_assert(
      sizeof(GSourceFuncs) == sizeof(glib_sources::SourceFuncsLayout) &&
          offsetof(GSourceFuncs, dispatch) == offsetof(glib_sources::SourceFuncsLayout, dispatch),
      "GSourceFuncs as glib_source_wrap.h lays it out");
  auto table = [](GSourceFuncs* funcs) {
    return reinterpret_cast<glib_sources::SourceFuncsLayout*>(funcs);
  };
  const glib_sources::SourceTables tables = {
      {table(&g_timeout_funcs), table(&g_idle_funcs), table(&g_io_watch_funcs),
       table(&g_child_watch_funcs), table(&g_unix_signal_funcs), table(&g_unix_fd_source_funcs)},
      reinterpret_cast<glib_sources::SourceNameFunction>(&g_source_get_name),
      reinterpret_cast<glib_sources::SourceReadyTimeFunction>(&g_source_get_ready_time),
  };
  glib_sources::WrapSourceDispatch(tables);
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
