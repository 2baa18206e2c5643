// Finding the separate debug file of a binary, in the order llvm-symbolizer and gdb use:
//   1. by build-id: DIR/.build-id/xx/rest.debug for each debug directory (default
//      /usr/lib/debug);
//   2. by .gnu_debuglink (name + CRC32): beside the binary, in .debug/ beside it, and under each
//      debug directory followed by the binary's directory;
//   3. beside the binary as BINARY.debug (a common manual layout).
// Candidates whose build-id or CRC does not match are skipped and reported.
#ifndef HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_
#define HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_

#include <string>
#include <vector>

namespace hangwatch::symbols {

struct DebugFileSearch {
  std::vector<std::string> debug_dirs;  // empty: /usr/lib/debug
  // Candidates that were found but rejected (wrong build-id or CRC), for error messages.
  std::vector<std::string> rejected;
};

// The separate debug file for the binary at `binary_path` (with build-id `build_id`, may be
// empty), or "" when there is none.
std::string FindSeparateDebugFile(const std::string& binary_path, const std::string& build_id,
                                  DebugFileSearch* search);

// The file for `build_id` under the debug directories (DIR/.build-id/xx/rest.debug, or
// DIR/xx/rest.debug, or DIR/BUILDID.debug), verified; "" when none.
std::string FindDebugFileByBuildId(const std::string& build_id, DebugFileSearch* search);

// True when the ELF file at `path` has a non-empty .debug_info (or .zdebug_info) section.
bool HasDwarf(const std::string& path);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_
