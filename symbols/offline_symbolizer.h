// OfflineSymbolizer: addresses of a binary -> functions, files, lines and inlined frames, away
// from the process that recorded them (`symbolize`, `symbols index`, and
// every command that symbolizes: report, run, gate, top, export, snapshot).
//
// Each binary gets a SymbolIndex, found or stored in the cache directory by build-id
// ($HANGWATCH_CACHE_DIR, else $XDG_CACHE_HOME/hangwatch, else ~/.cache/hangwatch). Without a
// cached index, a handful of addresses are answered by reading only the compilation units that
// cover them (fast cold start); many addresses build the whole index and cache it.
//
// Not thread-safe: use one per thread.
#ifndef HANGWATCH_SYMBOLS_OFFLINE_SYMBOLIZER_H_
#define HANGWATCH_SYMBOLS_OFFLINE_SYMBOLIZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "symbols/debug_file_locator.h"
#include "symbols/index/symbol_index.h"
#include "symbols/symbol_cache.h"

namespace hangwatch::symbols {

struct OfflineSymbolizerOptions {
  // Where separate debug files are looked up by build-id and debuglink (empty: /usr/lib/debug).
  std::vector<std::string> debug_dirs;
  // Binaries or debug files (or directories of them, not recursive) to match by build-id when
  // the recorded module path does not exist or is another build (symbolizing on another
  // machine).
  std::vector<std::string> search_paths;
  // empty: DefaultCacheDir() (symbol_cache.h). Used only when only this user (or root) can
  // write into it; else not at all, with one warning.
  std::string cache_dir;
  bool read_cache = true;
  bool write_cache = true;  // store whole indexes built here
  // Up to this many addresses per binary are answered without building the whole index.
  size_t cold_limit = 256;
  int threads = 0;  // index build threads; 0 = all cores
  // Fetch debug files that are on no local path by build-id from the debuginfod servers of
  // $DEBUGINFOD_URLS (symbols/debuginfod_source.h), when it is set; the last link of the chain.
  bool debuginfod = true;
  // Replaces the debuginfod servers of $DEBUGINFOD_URLS when set (tests).
  std::shared_ptr<DebugFileSource> remote;
};

class OfflineSymbolizer {
 public:
  explicit OfflineSymbolizer(OfflineSymbolizerOptions options = {});
  ~OfflineSymbolizer();

  // Symbolizes ELF virtual addresses of the binary at `path` (as llvm-symbolizer --obj does).
  // On error (missing or non-ELF file...) returns the error and fills `out` with "??" answers.
  absl::Status SymbolizeFile(const std::string& path, std::span<const uint64_t> addresses,
                             std::vector<SymbolizedAddress>* out);

  // Symbolizes addresses of the module with `build_id`, recorded at `module_path`: uses the
  // cached index, else the module path when its build-id matches, else a file from
  // search_paths or the debug directories with that build-id.
  absl::Status SymbolizeBuildId(const std::string& build_id, const std::string& module_path,
                                std::span<const uint64_t> addresses,
                                std::vector<SymbolizedAddress>* out);

  // Builds the whole index for a binary and stores it in the cache; returns the cache path.
  absl::StatusOr<std::string> IndexBinary(const std::string& path);

  // Problems worth telling the user about (rejected debug files...), accumulated.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct Source {
    std::string symbols_path;  // the binary (symbol table)
    std::string debug_path;    // where the DWARF is ("" when none)
    std::string build_id;
  };
  absl::StatusOr<Source> Resolve(const std::string& path);
  absl::StatusOr<const SymbolIndex*> IndexFor(const Source& source,
                                              std::span<const uint64_t> addresses);

  // Whether the cache directory may be used (checked once, when it exists; one warning when
  // not). `create` makes it first.
  bool CacheUsable(bool create);

  OfflineSymbolizerOptions options_;
  enum class CacheState { kUnchecked, kTrusted, kRefused } cache_ = CacheState::kUnchecked;
  DebugFileLocator locator_;                                  // debug_dirs and search_paths
  std::map<std::string, std::unique_ptr<SymbolIndex>> full_;  // by build-id or path
  std::vector<std::unique_ptr<SymbolIndex>> partial_;         // answers for cold lookups
  std::vector<std::string> warnings_;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_OFFLINE_SYMBOLIZER_H_
