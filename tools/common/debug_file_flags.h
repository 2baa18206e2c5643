// The command-line flags of the debug-file lookup chain (symbols/debug_file_locator.h) and of
// the symbol index cache, declared in one place for every subcommand that takes them (report,
// top, gate, export, symbolize, symbols index).
#ifndef HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_
#define HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_

#include "symbols/offline_symbolizer.h"
#include "tools/common/flag_parser.h"

namespace hangwatch::tools {

// Which of the flags a subcommand takes (a bit set).
enum DebugFileFlags : unsigned {
  kSearchFlag = 1,              // --search PATH: a binary or directory of binaries; repeatable
  kDebugDirFlag = 2,            // --debug-dir DIR: a debug directory; repeatable
  kDebugFileDirectoryFlag = 4,  // --debug-file-directory DIR: llvm-symbolizer's --debug-dir
  kCacheFlags = 8,              // --cache-dir DIR (the index cache), --no-cache (none at all)
};

// Declares the `accepted` flags on `parser`; their values go to `options`.
void AddDebugFileFlags(FlagParser* parser, unsigned accepted,
                       symbols::OfflineSymbolizerOptions* options);

// The flags of every command that symbolizes reports offline (report, top, gate, export):
// --search, --debug-dir, --cache-dir, --no-cache into `options`, and --no-symbolize, which
// sets *symbolize to false.
void AddSymbolizeFlags(FlagParser* parser, symbols::OfflineSymbolizerOptions* options,
                       bool* symbolize);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_DEBUG_FILE_FLAGS_H_
