// What a GLib program's passes dispatch, under the preload shim: the agent library finds the
// GLib the program loaded (it does not link GLib: most programs it is loaded into have none)
// and wraps the dispatch entries of GLib's own source types, as the GLib adapter does for a
// program that embeds it (integrations/glib/glib_source_wrap.h). The hang's context then names
// the source (its name, else its type) and the callback.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_GLIB_SOURCES_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_GLIB_SOURCES_H_

namespace hangwatch::preload {

// Wraps GLib's source types when the process has loaded libglib-2.0.so.0 (in any scope: Python
// loads it with its extension module, RTLD_LOCAL); nothing when it has not. Returns true once
// done, then costs one atomic load. Any thread; not in a signal handler (dlopen's lock).
bool WrapGLibSourcesIfLoaded();

// Whether libglib-2.0.so is mapped in this process, from /proc/self/maps: no dynamic loader
// lock taken. The watchdog asks this first: a main thread stuck inside dlopen() (a library
// constructor that never returns) holds that lock, and a dlopen() of the watchdog's would wait
// for it for good; the lock is taken only once GLib is there to be wrapped.
bool GLibIsMapped();

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_GLIB_SOURCES_H_
