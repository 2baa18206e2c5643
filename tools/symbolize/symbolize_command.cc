// `hangwatch symbolize`: llvm-symbolizer-compatible address symbolization (see --help).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "symbols/index/symbol_index.h"
#include "symbols/offline_symbolizer.h"
#include "tools/common/command.h"
#include "tools/common/debug_file_flags.h"
#include "tools/common/flag_parser.h"
#include "tools/common/terminal_text.h"
#include "tools/symbolize/symbolize_command.h"

namespace hangwatch::tools {
namespace {

constexpr char kUsage[] =
    "usage: hangwatch symbolize (--obj PATH | --build-id ID) [options] [ADDR...]\n"
    "\n"
    "Prints, for each address (arguments, else one per line on stdin), the function, then\n"
    "file:line:column, one pair per inlined frame (innermost first), then an empty line: the\n"
    "output of llvm-symbolizer. Addresses are ELF virtual addresses (0x-prefixed hex, or\n"
    "decimal); pass return addresses minus 1. Unknowns print as \"?\?\" and \"?\?:0:0\".\n"
    "\n"
    "  --obj PATH        the binary (its separate debug file is found by build-id, debuglink,\n"
    "                    or PATH.debug)\n"
    "  --build-id ID     symbolize by build-id: a cached index, or a file in --debug-dir /\n"
    "                    --search\n"
    "  --debug-dir DIR   where to look for debug files (DIR/.build-id/xx/rest.debug); repeatable\n"
    "                    (default /usr/lib/debug)\n"
    "  --search PATH     a binary or directory of binaries to match by build-id; repeatable\n"
    "  --cache-dir DIR   index cache (default $HANGWATCH_CACHE_DIR, $XDG_CACHE_HOME/hangwatch,\n"
    "                    ~/.cache/hangwatch)\n"
    "  --no-cache        neither read nor write cached indexes\n"
    "\n"
    "Exit status: 0, or 2 when the binary cannot be used (answers are then \"?\?\").\n";

// llvm-symbolizer's address syntax: 0x-prefixed hex, leading-0 octal, else decimal.
bool ParseAddress(std::string_view s, uint64_t* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  if (s.empty()) return false;
  std::string z(s);
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(z.c_str(), &end, 0);
  return errno == 0 && end != nullptr && *end == '\0' && z[0] != '-' && z[0] != '+';
}

int Run(int argc, char** argv) {
  std::string obj, build_id;
  symbols::OfflineSymbolizerOptions options;
  FlagParser flags("hangwatch symbolize");
  flags.Help({kUsage});
  flags.String({"--obj", "--exe", "-e"}, &obj);
  flags.String({"--build-id"}, &build_id);
  AddDebugFileFlags(&flags, kSearchFlag | kDebugDirFlag | kDebugFileDirectoryFlag | kCacheFlags,
                    &options);
  // Arguments are addresses: "-1" is one (echoed as it is not an address), "--" an option.
  flags.DashDigitIsPositional();
  flags.NoDoubleDash();
  flags.UnknownOption("unknown option '{}' (see --help)");
  if (const std::optional<int> done = flags.Parse(argc, argv)) return *done;
  std::vector<std::string> args = flags.positional();
  if (obj.empty() == build_id.empty()) {
    return flags.Fail("give exactly one of --obj PATH or --build-id ID");
  }

  // Read every input first: the cold path wants the whole set of addresses at once.
  std::vector<std::string> lines;
  if (!args.empty()) {
    lines = std::move(args);
  } else {
    for (std::string line; std::getline(std::cin, line);) lines.push_back(std::move(line));
  }
  std::vector<uint64_t> addresses;
  std::vector<int> slot(lines.size(), -1);  // line -> address index, -1 when echoed
  for (size_t i = 0; i < lines.size(); ++i) {
    uint64_t a;
    if (ParseAddress(lines[i], &a)) {
      slot[i] = static_cast<int>(addresses.size());
      addresses.push_back(a);
    }
  }

  symbols::OfflineSymbolizer symbolizer(options);
  std::vector<symbols::SymbolizedAddress> answers;
  absl::Status status = build_id.empty()
                            ? symbolizer.SymbolizeFile(obj, addresses, &answers)
                            : symbolizer.SymbolizeBuildId(build_id, "", addresses, &answers);
  for (const std::string& w : symbolizer.warnings()) {
    std::fprintf(stderr, "hangwatch symbolize: warning: %s\n", EscapeForTerminal(w).c_str());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "hangwatch symbolize: %s\n",
                 EscapeForTerminal(std::string(status.message())).c_str());
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (slot[i] < 0) {
      // Not an address: echoed, as llvm-symbolizer does.
      out.append(lines[i]);
      out.push_back('\n');
    } else {
      symbols::AppendLlvmStyle(answers[static_cast<size_t>(slot[i])], &out);
    }
    if (out.size() > (1 << 16)) {
      // Names and files come from the binary and its debug file: no control sequences.
      out = EscapeForTerminal(out);
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  out = EscapeForTerminal(out);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return status.ok() ? 0 : kExitUsage;
}

}  // namespace

const Command kSymbolizeCommand = {
    "symbolize", "addresses -> functions, files, lines, inlined frames (llvm-symbolizer output)",
    Run};
}  // namespace hangwatch::tools
