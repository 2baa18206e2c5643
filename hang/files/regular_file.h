// Opening the agent's own files (the JSON Lines report, the open-hang file), which often live in
// directories other users can write to (/tmp, a shared run directory). Another user may have
// put a symbolic link there (to make us write, as root, into a file of their choosing), a FIFO
// (to block the watchdog in open() or write()) or a device. None of them is ever opened: the
// last component is not followed (O_NOFOLLOW), the open never waits (O_NONBLOCK), and anything
// but a regular file is refused before and after opening. (Reading files someone else named:
// symbols/regular_file.h, with ownership and size rules; this one creates and writes.)
#ifndef HANGWATCH_HANG_FILES_REGULAR_FILE_H_
#define HANGWATCH_HANG_FILES_REGULAR_FILE_H_

#include <sys/types.h>

#include <string>

namespace hangwatch::agent {

// open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode) when `path` is a
// regular file (or does not exist and `flags` has O_CREAT). Returns the descriptor, or -1 with
// errno set and the reason in *error, to follow "cannot open PATH: ": "it is a symbolic link
// (not followed)" (ELOOP), "not a regular file (a FIFO)" (EINVAL), or the system's reason.
int OpenRegularFile(const std::string& path, int flags, mode_t mode, std::string* error);

}  // namespace hangwatch::agent

#endif  // HANGWATCH_HANG_FILES_REGULAR_FILE_H_
