// The dispatch entries of GLib's own source types, wrapped to tell the pass what it dispatches
// (hangwatch::SetPassSource). Shared by the GLib adapter (hangwatch_glib.cc, linked with GLib)
// and the preload agent (integrations/preload/glib_sources.cc, which must not link GLib and
// finds it at run time), so nothing here names a GLib type: GSourceFuncs is declared by its
// layout, GLib's public and stable ABI.
#ifndef HANGWATCH_INTEGRATIONS_GLIB_GLIB_SOURCE_WRAP_H_
#define HANGWATCH_INTEGRATIONS_GLIB_GLIB_SOURCE_WRAP_H_

#include <cstdint>

namespace hangwatch::glib_sources {

// GSourceFuncs: prepare, check, dispatch, finalize, then the two closure functions.
using DispatchFunction = int (*)(void* source, void* callback, void* user_data);
struct SourceFuncsLayout {
  void* prepare;
  void* check;
  DispatchFunction dispatch;
  void* finalize;
  void* closure_callback;
  void* closure_marshal;
};
using SourceNameFunction = const char* (*)(void* source);  // g_source_get_name
// g_source_get_ready_time: the monotonic time (µs, CLOCK_MONOTONIC) the source is due; -1 none.
using SourceReadyTimeFunction = int64_t (*)(void* source);

// GLib's exported tables of its own source types: the variable, and the name an unnamed
// source of that type is told by.
struct SourceTypeName {
  const char* symbol;
  const char* type_name;
};
inline constexpr int kSourceTypeCount = 6;
inline constexpr SourceTypeName kSourceTypes[kSourceTypeCount] = {
    {"g_timeout_funcs", "GTimeoutSource"},
    {"g_idle_funcs", "GIdleSource"},
    {"g_io_watch_funcs", "GIOWatch"},
    {"g_child_watch_funcs", "GChildWatchSource"},
    {"g_unix_signal_funcs", "GUnixSignalSource"},
    {"g_unix_fd_source_funcs", "GUnixFDSource"},
};

// The tables, in the order of kSourceTypes (null: that type is left alone), the function that
// reads a source's name, and the one that reads when it was due (null: no lateness told).
struct SourceTables {
  SourceFuncsLayout* funcs[kSourceTypeCount];
  SourceNameFunction source_name;
  SourceReadyTimeFunction ready_time = nullptr;
};
// Index of g_timeout_funcs in kSourceTypes: a timeout source's ready time, read before GLib's
// own dispatch re-arms it, is when it fell due; its dispatch beginning later than that is its
// lateness (the pass's queued time, SetPassSource).
inline constexpr int kTimeoutSourceType = 0;

// Wraps the dispatch entry of each table, once per copy of this code (the adapter's, in the
// program; the preload agent's own): later calls do nothing. For the life of the process: a
// dispatch under way on another thread may be in a wrapper, so they are never unwrapped. Each
// wrapper is complete before its entry is replaced (one aligned pointer store: another
// thread's GLib may read the entry meanwhile). An entry that does not point into the object
// its table lives in was wrapped already (by the other copy: a program that embeds the adapter
// and runs under the shim) and is left alone: a dispatch is told once.
void WrapSourceDispatch(const SourceTables& tables);

}  // namespace hangwatch::glib_sources

#endif  // HANGWATCH_INTEGRATIONS_GLIB_GLIB_SOURCE_WRAP_H_
