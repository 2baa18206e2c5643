// BuildSymbolIndex: reads DWARF with libdw (in parallel across compilation units, one libdw
// handle per thread) and the ELF symbol table with libelf, and produces a SymbolIndex image
// (symbol_index_format.h).
#ifndef HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_BUILDER_H_
#define HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hangwatch::symbols {

struct SymbolIndexOptions {
  // The file with the DWARF (the binary itself, or its separate debug file). Empty: build from
  // the symbol table only.
  std::string debug_path;
  // The file whose ELF symbol table names outermost frames, as llvm-symbolizer uses the binary
  // it was given (--obj) even when the DWARF comes from a separate file.
  std::string symbols_path;
  // Worker threads; 0 = one per hardware thread.
  int threads = 0;
  // When non-empty, only the compilation units covering these addresses are read: the fast
  // path for symbolizing a handful of addresses without a cached index.
  std::vector<uint64_t> only_addresses;
  // Store demangled symbol-table names (else they are demangled at lookup).
  bool demangle_symbols = true;
  // Store the bulky byte sections zstd-compressed (for indexes kept on disk; lookups inflate
  // what they touch). An index used once and thrown away is faster uncompressed.
  bool compress = true;
  // Read the DIEs with libdw only, not with our own reader (dwarf_die_reader.h) first: both
  // give the same index; tests compare them and the benchmark measures the difference.
  bool libdw_dies = false;
};

struct SymbolIndexStats {
  uint64_t units = 0;        // compilation units in the DWARF
  uint64_t units_read = 0;   // of which were read (all, unless only_addresses)
  uint64_t units_libdw = 0;  // of those, how many had their DIEs read by libdw
  uint64_t debug_bytes = 0;  // .debug_* sections, uncompressed
  uint64_t debug_bytes_on_disk = 0;
  uint64_t index_bytes = 0;
};

// Returns the index image. Errors: the files are missing, not ELF, or unreadable. Malformed
// DWARF inside a valid ELF file degrades to fewer answers, not an error.
absl::StatusOr<std::string> BuildSymbolIndex(const SymbolIndexOptions& options,
                                             SymbolIndexStats* stats = nullptr);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_INDEX_SYMBOL_INDEX_BUILDER_H_
