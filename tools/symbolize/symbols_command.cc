// `hangwatch symbols index BINARY...`: builds symbol indexes into the cache (see --help).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "symbols/offline_symbolizer.h"
#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/symbolize/symbols_command.h"

namespace hangwatch::tools {
namespace {

constexpr char kSymbolsUsage[] =
    "usage: hangwatch symbols index [--debug-dir DIR]... [--cache-dir DIR] [--threads N]\n"
    "                               BINARY...\n"
    "\n"
    "Builds the symbol index (functions, lines, inlined frames, from DWARF and the symbol\n"
    "table) of each binary and stores it in the cache under its build-id, where `hangwatch\n"
    "symbolize` and `hangwatch report` find it. Prints one line per binary: the index path.\n"
    "Cache: --cache-dir, else $HANGWATCH_CACHE_DIR, $XDG_CACHE_HOME/hangwatch,\n"
    "~/.cache/hangwatch.\n";

int RunSymbols(int argc, char** argv) {
  if (argc < 2)
    return Fail("hangwatch symbols", "missing subcommand (see hangwatch symbols --help)");
  if (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    std::fputs(kSymbolsUsage, stdout);
    return 0;
  }
  if (std::string_view(argv[1]) != "index") {
    return Fail("hangwatch symbols",
                "unknown subcommand '" + std::string(argv[1]) + "' (see --help)");
  }
  symbols::OfflineSymbolizerOptions options;
  FlagParser flags("hangwatch symbols index");
  AddDebugFileFlags(&flags, kDebugDirFlag, &options);
  flags.String({"--cache-dir"}, &options.cache_dir);
  flags.Value({"--threads"}, [&](const std::string& v) {
    options.threads = std::atoi(v.c_str());  // anything else: 0, the default
    return std::string();
  });
  flags.NoDoubleDash();
  flags.UnknownOption("unknown option '{}'");
  if (const std::optional<int> done = flags.Parse(argc, argv, 2)) return *done;
  const std::vector<std::string>& binaries = flags.positional();
  if (binaries.empty()) return flags.Fail("no BINARY given (see hangwatch symbols --help)");
  symbols::OfflineSymbolizer symbolizer(options);
  int status = 0;
  for (const std::string& b : binaries) {
    auto t0 = std::chrono::steady_clock::now();
    auto path = symbolizer.IndexBinary(b);
    if (!path.ok()) {
      std::fprintf(stderr, "hangwatch symbols index: %s\n",
                   EscapeForTerminal(std::string(path.status().message())).c_str());
      status = kExitUsage;
      continue;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s\n", path->c_str());
    std::fprintf(stderr, "hangwatch symbols index: %s indexed in %.0f ms\n",
                 EscapeForTerminal(b).c_str(), ms);
  }
  for (const std::string& w : symbolizer.warnings()) {
    std::fprintf(stderr, "hangwatch symbols index: warning: %s\n", EscapeForTerminal(w).c_str());
  }
  return status;
}

}  // namespace

const Command kSymbolsCommand = {
    "symbols", "symbols index BINARY: build and cache the symbol index", RunSymbols};
}  // namespace hangwatch::tools
