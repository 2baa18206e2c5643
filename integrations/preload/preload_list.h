// The LD_PRELOAD list without the shim: what the exec interposers (preload_exec.cc) hand to a
// program that must run unwatched, and what a process that armed leaves in its own environment.
// Allocation-free and libc only: it runs in the loader, right before an exec, possibly in a
// vfork child. Pure, so it is tested without preloading anything.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_LIST_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_LIST_H_

#include <stddef.h>

#include <string_view>

namespace hangwatch::preload {

// The LD_PRELOAD list (entries separated by ':' or spaces, as ld.so reads it) without the
// shim: entries equal to `self_path` or whose file name starts with "libhangwatch_preload".
// The other entries keep their order, joined by ':'. Written to `out` with a terminating NUL;
// `out` must hold list.size() + 1 bytes. Returns the length written. Allocation-free: it runs
// right before an exec, possibly in a vfork child.
size_t RemoveShimFromPreload(std::string_view list, std::string_view self_path, char* out);
// True when the list has an entry RemoveShimFromPreload() would remove.
bool HasShim(std::string_view list, std::string_view self_path);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_PRELOAD_LIST_H_
