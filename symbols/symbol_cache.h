// The symbol index cache: where it is, whether it can be trusted, and writing into it.
//
// A cached index is believed as it is (names, files, lines; `gate` compares signatures built from
// them), so a directory that another user could write into is no cache: an index planted there
// would name any frame as its author likes. A cache directory is used only when it, and every
// directory above it, can be written by this user or root only (an ancestor writable by others
// must have the sticky bit, as /tmp has); its files are read only when they are regular files
// that only this user or root can write; files are written through a descriptor of the
// directory, to an O_EXCL | O_NOFOLLOW temporary file renamed into place (renameat).
#ifndef HANGWATCH_SYMBOLS_SYMBOL_CACHE_H_
#define HANGWATCH_SYMBOLS_SYMBOL_CACHE_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace hangwatch::symbols {

// $HANGWATCH_CACHE_DIR, else $XDG_CACHE_HOME/hangwatch, else HOME/.cache/hangwatch with HOME
// from $HOME, else from the user's password entry; "" (no cache) when there is none. Never a
// shared directory picked on the user's behalf (an unset HOME used to mean /tmp/.cache).
std::string DefaultCacheDir();

// The cache file for a build-id.
std::string CacheFileFor(const std::string& cache_dir, const std::string& build_id);

// OK when `dir` (which must exist) may hold this user's cache (see above); else why not
// (FailedPrecondition, the message names the directory at fault).
absl::Status CheckCacheDir(const std::string& dir);

// Writes `bytes` as `dir`/`name` atomically, with `mode`: never following a symbolic link, never
// through a file someone else created.
absl::Status WriteCacheFile(const std::string& dir, const std::string& name, std::string_view bytes,
                            mode_t mode = 0644);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_SYMBOL_CACHE_H_
