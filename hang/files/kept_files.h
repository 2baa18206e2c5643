// Descriptors kept for files a process may lose the right to open by name.
//
// A server started as root that switches to a service user (nginx's workers become `nobody`)
// can no longer open the files the agent writes: the report and the open-hang file are 0600 and
// owned by the user who started the watch, often in a 0700 directory. The preload shim opens
// them right before the program changes user (integrations/preload/privilege_drop.cc) and keeps
// the descriptors here; the JSON Lines writer and the open-hang file use a kept descriptor only
// when the name no longer opens (EACCES, EPERM), so paths are used whenever they still work.
//
// A kept descriptor is never trusted blindly: the program may close it or reuse its number for a
// file of its own (a daemon closing every descriptor it did not open). Each is checked against
// the device and inode it had when it was kept before a copy is handed out; a number that now
// names another file is the program's and is left alone (never written, never closed).
//
// Descriptors are close-on-exec (an executed program does not inherit them); a forked child
// inherits them and this table, so a worker forked after the switch writes through them too.
// libc only, fixed storage, no lock: KeepFile runs right before setuid(), maybe in a process
// whose other threads hold malloc's locks; readers run on the watchdog thread.
//
// One table per process: the preload shim's two libraries each link their own (hidden) copy of
// this file, as a library of its own built without the C++ runtime's features
// (hangwatch_kept_files). The loader (libhangwatch_preload.so) keeps the descriptors in its
// table; the agent library (libhangwatch_preload_agent.so) routes its DupKeptFile to the
// loader's (SetKeptFileSource) when it is loaded, so the agent's writers find them.
#ifndef HANGWATCH_HANG_FILES_KEPT_FILES_H_
#define HANGWATCH_HANG_FILES_KEPT_FILES_H_

namespace hangwatch::agent {

// Keeps `fd` (opened by the caller, close-on-exec) as the descriptor of the file named `path`
// (absolute). The first descriptor kept for a path stays; false (fd left to the caller) when the
// path is already kept, is too long, the table is full or fd is not open.
bool KeepFile(const char* path, int fd);

// A new close-on-exec descriptor of the file kept for `path`, when the kept descriptor still
// refers to it (same device and inode as when kept); -1 otherwise (none kept, or the number is
// the program's now). The caller owns (closes) the copy.
int DupKeptFile(const char* path);

// From now on DupKeptFile asks `dup_kept_file` (another copy's DupKeptFile: the preload
// shim's loader's) instead of this copy's table. Set once, before any reader runs.
void SetKeptFileSource(int (*dup_kept_file)(const char* path));

// Closes the descriptor kept for `path` (when it is still that file) and forgets it: a forked
// child drops what belongs to its parent alone (the parent's open-hang file and its lock).
// System calls only: callable from a pthread_atfork child handler.
void ForgetKeptFile(const char* path);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_FILES_KEPT_FILES_H_
