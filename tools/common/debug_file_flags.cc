#include "tools/common/debug_file_flags.h"

#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::tools {

void AddDebugFileFlags(FlagParser* parser, unsigned accepted,
                       symbols::OfflineSymbolizerOptions* options) {
  struct Flag {
    unsigned bit;
    std::string_view name;
    std::vector<std::string> symbols::OfflineSymbolizerOptions::*list;
  };
  static constexpr Flag kFlags[] = {
      {kSearchFlag, "--search", &symbols::OfflineSymbolizerOptions::search_paths},
      {kDebugDirFlag, "--debug-dir", &symbols::OfflineSymbolizerOptions::debug_dirs},
      {kDebugFileDirectoryFlag, "--debug-file-directory",
       &symbols::OfflineSymbolizerOptions::debug_dirs},
  };
  for (const Flag& f : kFlags) {
    if ((accepted & f.bit) == 0) continue;
    auto* list = &(options->*f.list);
    parser->Value({f.name}, [list](const std::string& v) {
      list->push_back(v);
      return std::string();
    });
  }
  if ((accepted & kCacheFlags) != 0) {
    parser->String({"--cache-dir"}, &options->cache_dir);
    parser->Switch({"--no-cache"},
                   [options] { options->read_cache = options->write_cache = false; });
  }
}

void AddSymbolizeFlags(FlagParser* parser, symbols::OfflineSymbolizerOptions* options,
                       bool* symbolize) {
  AddDebugFileFlags(parser, kSearchFlag | kDebugDirFlag | kCacheFlags, options);
  parser->Switch({"--no-symbolize"}, [symbolize] { *symbolize = false; });
}

}  // namespace hangwatch::tools
