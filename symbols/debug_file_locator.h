// Finding the files that hold a module's symbols and DWARF, as an ordered chain of sources.
//
// Two lookups, each an ordered list of DebugFileSource (the first verified answer wins):
//   - the separate debug file of a binary, in the order llvm-symbolizer and gdb use:
//       1. by build-id: DIR/.build-id/xx/rest.debug (also DIR/xx/rest.debug, DIR/ID.debug) for
//          each debug directory (default /usr/lib/debug);
//       2. by .gnu_debuglink (name + CRC32): beside the binary, in .debug/ beside it, and under
//          each debug directory followed by the binary's directory;
//       3. beside the binary as BINARY.debug (a common manual layout);
//   - a binary or debug file by build-id, for a module recorded at some path (symbolizing a
//     report, possibly on another machine):
//       1. the recorded path, when the file there has that build-id;
//       2. the search paths (`--search`: files, or directories of them, not recursive);
//       3. the debug directories by build-id (as 1. above).
//   - last, for both: the remote sources (debuginfod, symbols/debuginfod_source.h), asked only
//     when nothing on this machine answered (for a binary's DWARF: not even the binary itself).
// A new place to fetch files from is one more DebugFileSource, appended to the chains by
// DebugFileLocator's constructor.
// Candidates whose build-id or CRC does not match are skipped and reported.
#ifndef HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_
#define HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_

#include <memory>
#include <string>
#include <vector>

namespace hangwatch::symbols {

// What a lookup is for.
struct DebugFileQuery {
  std::string build_id;  // may be empty (then only path-based sources can answer)
  std::string path;      // the binary, or the module's recorded path; may be empty
};

// One place to look.
class DebugFileSource {
 public:
  virtual ~DebugFileSource() = default;
  // A verified file for `query`, or "" when this source has none. Candidates that were found
  // but rejected (wrong build-id or CRC) are appended to *rejected, for messages.
  virtual std::string Find(const DebugFileQuery& query, std::vector<std::string>* rejected) = 0;
};

struct DebugFileLocatorOptions {
  std::vector<std::string> debug_dirs;    // empty: /usr/lib/debug
  std::vector<std::string> search_paths;  // binaries or debug files, or directories of them
  // Sources that fetch files by build-id from elsewhere (debuginfod), asked after every local
  // one; empty: none (OfflineSymbolizer adds $DEBUGINFOD_URLS's servers).
  std::vector<std::shared_ptr<DebugFileSource>> remote = {};
};

class DebugFileLocator {
 public:
  explicit DebugFileLocator(DebugFileLocatorOptions options);
  ~DebugFileLocator();
  DebugFileLocator(const DebugFileLocator&) = delete;
  DebugFileLocator& operator=(const DebugFileLocator&) = delete;

  // The separate debug file of the binary at `binary_path` (with build-id `build_id`, may be
  // empty), or "" when there is none.
  std::string FindSeparateDebugFile(const std::string& binary_path, const std::string& build_id,
                                    std::vector<std::string>* rejected);

  // Where the DWARF of the binary at `binary_path` is: its separate debug file on this machine,
  // else the binary itself when it has DWARF, else a debug file from a remote source, else "".
  std::string FindDwarf(const std::string& binary_path, const std::string& build_id,
                        std::vector<std::string>* rejected);

  // A binary or debug file with `build_id`, for a module recorded at `module_path` (may be
  // empty), or "" when none is found.
  std::string FindByBuildId(const std::string& build_id, const std::string& module_path,
                            std::vector<std::string>* rejected);

 private:
  std::vector<std::shared_ptr<DebugFileSource>> separate_debug_chain_;
  std::vector<std::shared_ptr<DebugFileSource>> build_id_chain_;
  std::vector<std::shared_ptr<DebugFileSource>> remote_chain_;  // after both
};

// The single-lookup forms, with the debug directories only (no search paths).
struct DebugFileSearch {
  std::vector<std::string> debug_dirs;  // empty: /usr/lib/debug
  // Candidates that were found but rejected (wrong build-id or CRC), for error messages.
  std::vector<std::string> rejected;
};

// DebugFileLocator::FindSeparateDebugFile with `search`'s debug directories.
std::string FindSeparateDebugFile(const std::string& binary_path, const std::string& build_id,
                                  DebugFileSearch* search);

// The file for `build_id` under the debug directories (DIR/.build-id/xx/rest.debug, or
// DIR/xx/rest.debug, or DIR/BUILDID.debug), verified; "" when none.
std::string FindDebugFileByBuildId(const std::string& build_id, DebugFileSearch* search);

// True when the ELF file at `path` has a non-empty .debug_info (or .zdebug_info) section.
bool HasDwarf(const std::string& path);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_DEBUG_FILE_LOCATOR_H_
