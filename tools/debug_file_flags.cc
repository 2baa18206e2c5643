#include "tools/debug_file_flags.h"

#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::tools {
namespace {

// The value of `flag` at argv[*i] ("--flag VALUE" or "--flag=VALUE"), advancing *i past a
// separate value.
bool FlagValue(int argc, char** argv, int* i, std::string_view flag, std::string* value) {
  const std::string_view a = argv[*i];
  if (a == flag) {
    if (*i + 1 >= argc) return false;
    *value = argv[++*i];
    return true;
  }
  if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
    *value = std::string(a.substr(flag.size() + 1));
    return true;
  }
  return false;
}

}  // namespace

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
