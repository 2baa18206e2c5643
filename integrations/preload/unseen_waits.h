// Programs whose threads wait without going through libc, so that the shim, which sees only the
// waits that libc's poll, select and epoll calls make, cannot tell when their event loop idles.
//
// Go is one: its scheduler parks goroutines and idles its threads with raw system calls (futex,
// epoll_pwait). A Go program built with cgo loads the shim like any dynamically linked program,
// and a C call of its main thread that waits once (getaddrinfo's poll, libcurl's) would arm the
// agent, which then never sees another wait: the rest of the run would be one endless pass,
// reported as a hang with whatever the main thread ran when sampled. Such a program is not armed.
//
// Go is recognised by the `.go.buildinfo` section its linker writes into every executable (it
// survives `strip`, which keeps allocated sections). A C program linked with a Go library
// (-buildmode=c-archive) carries the section too, and nothing cheap tells its C main thread from
// Go's own: it is left unwatched as well (a limit docs/run.md states). Only the section headers
// and their name table are read, from /proc/self/exe: libc only, no allocation, a few pread
// calls on stack buffers (the shim's constructor calls it, before the program's own
// constructors).
// Plain code, libc only (hangwatch_preload_plain).
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_UNSEEN_WAITS_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_UNSEEN_WAITS_H_

namespace hangwatch::preload {

// True when the ELF file open at `fd` (of this machine's word size) has a section called
// `name`. False for anything else: not ELF, another class, unreadable or inconsistent headers.
// At most 65536 section headers are looked at.
bool ElfHasSection(int fd, const char* name);

// Why this process's waits cannot be seen through libc ("a Go program: ..."), or null when
// nothing says so (or /proc/self/exe cannot be read).
const char* WhyWaitsAreUnseen();

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_UNSEEN_WAITS_H_
