// Where `hangwatch run` takes libhangwatch_preload.so from. The library is loaded into every
// process the command starts, with their rights: under sudo, a root process. So it is taken
// only from where the installation put it (beside the `hangwatch` binary, or in its prefix's
// library directories, or the build tree's integrations/preload/), and only when no one but
// root, the user running `run` and the owner of the `hangwatch` binary (who decides what runs
// anyway) can change it: neither the file nor a directory above it belongs to anyone else or is
// writable by others (a sticky directory such as /tmp above the library's own excepted).
// $HANGWATCH_PRELOAD_LIB chooses among those places (another file name, another library
// directory of the prefix); a path anywhere else is refused: a sudoers `env_keep` that passes
// HANGWATCH_* would otherwise let the caller name any library for root to load.
//
// The shim is two libraries (integrations/preload/CMakeLists.txt): the loader that LD_PRELOAD
// names, and libhangwatch_preload_agent.so, which the loader takes from its own directory when
// a process first waits for events. The agent library must be there, and trusted as the loader
// is: a loader without it would watch nothing.
#ifndef HANGWATCH_TOOLS_RUN_SHIM_H_
#define HANGWATCH_TOOLS_RUN_SHIM_H_

#include <string>

namespace hangwatch::tools {

// The shim's absolute, resolved path, from $HANGWATCH_PRELOAD_LIB when set, else the first
// trusted candidate with its agent library. "" with one line in *error
// ("HANGWATCH_PRELOAD_LIB=... is refused: ...", "cannot find libhangwatch_preload.so ...",
// ".../libhangwatch_preload_agent.so is not readable ...") when there is none to use.
std::string FindTrustedShim(std::string* error);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_RUN_SHIM_H_
