// Runtimes whose event loop does not idle in a system wait call on the main thread: the shim
// interposes their own wait function, and on the main thread a call of it is one wait of the
// loop (wait_wrapper.h: InterposeRuntimeWait), whatever it waits in underneath.
//
// Known runtime wait functions, and why each is here:
//
//   Tcl_WaitForEvent (libtcl 8.6: tclsh, Tk's `wish`, Python's tkinter)
//     Threaded Tcl (Debian's, and every build since 8.6 by default) runs a notifier thread that
//     select()s on the loop's descriptors; the main thread idles in pthread_cond_(timed)wait
//     inside Tcl_WaitForEvent until that thread signals it. The shim would see no wait at all
//     after the Xlib poll() that armed it during start-up, and reported an idle `wish` as one
//     long blocked hang. Tcl_DoOneEvent calls Tcl_WaitForEvent through libtcl's PLT, and the
//     stubs table's entry is a relocation against the symbol too, so the preloaded definition
//     is the one called. An unthreaded Tcl select()s inside it: that select is part of this wait.
//     Once the main thread waited here with a timeout, Tcl's `after ms` (a select() in
//     Tcl_Sleep) and Xlib round trips inside a callback are work of the pass, as they are.
//
// Loops that need nothing here: GLib (GTK), Qt, libuv (Node), Python's asyncio and selectors,
// Emacs, nginx and Xt wait in poll, epoll_wait or select on the main thread itself, which the
// shim interposes (preload_shim.cc).
//
// A runtime's function may be reached through a library loaded later by dlopen() with
// RTLD_LOCAL (Python's _tkinter loads libtcl so), where dlsym(RTLD_NEXT) cannot see it: the real
// function is then looked up in the scope of the library that called the shim's.
#include <dlfcn.h>

#include "integrations/preload/wait_wrapper.h"

namespace {

// tcl.h's Tcl_Time (Tcl 8.6; Tcl 9 widens `sec` to long long, the same size here). The shim does
// not build against Tcl.
struct TclTime {
  long sec;
  long usec;
};
using TclWaitForEventFn = int (*)(const TclTime*);

TclWaitForEventFn g_tcl_wait_for_event;

// The definition the shim's own interposes: `name` as the library that called it (`caller`, an
// address inside it) would have bound it without the shim. Null when there is none.
void* FindRealDefinition(const char* name, void* caller, void* self) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f != nullptr && f != self) return f;
  dlerror();  // the failed lookup's message is ours: the program's next dlerror() must not see it
  Dl_info info{};
  if (caller == nullptr || dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return nullptr;
  // Already loaded: RTLD_NOLOAD only takes a reference, which dlclose() gives back.
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  f = dlsym(handle, name);  // the library's own scope: itself, then what it depends on
  if (f == nullptr) dlerror();
  dlclose(handle);
  return f != self ? f : nullptr;
}

// The real function; resolved by the constructor when the library is loaded with the program,
// else once, at the first call (a library loaded later by dlopen).
template <typename Fn>
Fn RealFunction(Fn* slot, const char* name, void* caller, void* self) {
  Fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<Fn>(FindRealDefinition(name, caller, self));
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int Tcl_WaitForEvent(const TclTime* time_ptr) {
  const TclWaitForEventFn real =
      RealFunction(&g_tcl_wait_for_event, "Tcl_WaitForEvent", __builtin_return_address(0),
                   reinterpret_cast<void*>(&Tcl_WaitForEvent));
  if (real == nullptr) return -1;  // cannot happen: only libtcl calls it; Tcl's "error" result
  // No time: wait until an event; a zero time: only poll (Tcl's `update`).
  using hangwatch::preload::WaitTimeout;
  const WaitTimeout timeout = time_ptr == nullptr                         ? WaitTimeout::kNone
                              : time_ptr->sec != 0 || time_ptr->usec != 0 ? WaitTimeout::kFinite
                                                                          : WaitTimeout::kZero;
  return hangwatch::preload::InterposeRuntimeWait(
      timeout, __builtin_return_address(0), reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()),
      [&] { return real(time_ptr); });
}

}  // extern "C"

namespace {

__attribute__((constructor)) void ResolveRuntimeWaits() {
  // Null when libtcl is not loaded (yet): the first call resolves it then.
  void* f = dlsym(RTLD_NEXT, "Tcl_WaitForEvent");
  if (f == nullptr) dlerror();  // not the program's error
  if (f != reinterpret_cast<void*>(&Tcl_WaitForEvent)) {
    __atomic_store_n(&g_tcl_wait_for_event, reinterpret_cast<TclWaitForEventFn>(f),
                     __ATOMIC_RELEASE);
  }
}

}  // namespace
