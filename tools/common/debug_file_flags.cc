#include "tools/common/debug_file_flags.h"

#include <string>
#include <string_view>
#include <vector>

#include "tools/common/flag_value.h"

namespace hangwatch::tools {

bool ParseDebugFileFlag(int argc, char** argv, int* i, unsigned accepted,
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
    std::string value;
    if ((accepted & f.bit) != 0 && FlagValue(argc, argv, i, f.name, &value)) {
      (options->*f.list).push_back(std::move(value));
      return true;
    }
  }
  if ((accepted & kCacheFlags) != 0) {
    if (FlagValue(argc, argv, i, "--cache-dir", &options->cache_dir)) return true;
    if (std::string_view(argv[*i]) == "--no-cache") {
      options->read_cache = options->write_cache = false;
      return true;
    }
  }
  return false;
}

}  // namespace hangwatch::tools
