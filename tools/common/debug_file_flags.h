// The command-line flags of the debug-file lookup chain (symbols/debug_file_locator.h) and of
// the symbol index cache, parsed in one place for every subcommand that takes them (report, top,
// symbolize, symbols index).
#ifndef HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_
#define HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_

#include "symbols/offline_symbolizer.h"

namespace hangwatch::tools {

// Which of the flags a subcommand takes (a bit set).
enum DebugFileFlags : unsigned {
  kSearchFlag = 1,              // --search PATH: a binary or directory of binaries; repeatable
  kDebugDirFlag = 2,            // --debug-dir DIR: a debug directory; repeatable
  kDebugFileDirectoryFlag = 4,  // --debug-file-directory DIR: llvm-symbolizer's --debug-dir
  kCacheFlags = 8,              // --cache-dir DIR (the index cache), --no-cache (none at all)
};

// When argv[*i] is one of the `accepted` flags, as "--flag VALUE" or "--flag=VALUE", adds the
// value to `options`, moves *i to the last argument it used and returns true. Returns false,
// with *i unchanged, for any other argument and for a flag whose value is missing (the
// caller's message for an unknown option then applies).
bool ParseDebugFileFlag(int argc, char** argv, int* i, unsigned accepted,
                        symbols::OfflineSymbolizerOptions* options);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_
