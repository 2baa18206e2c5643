// ElfSymbolTable: the function symbols of one ELF file, sorted by address, for name lookups
// without DWARF. Reads .symtab when present (static functions included); otherwise .dynsym
// merged with the .symtab embedded in .gnu_debugdata (MiniDebugInfo: an xz-compressed ELF that
// distributions such as Fedora ship inside stripped binaries).
//
// SelectElfSymbols is the one place that decides which symbols name code, for this table
// (ElfSymbolPolicy::kFunctions) and for the offline index (kLlvmSymbolizer).
//
// Addresses are ELF virtual addresses (ModuleAddress::offset). Lookups take no lock; demangled
// names are computed once per symbol and cached lock-free, so a warm lookup does not allocate.
#ifndef HANGWATCH_SYMBOLS_ELF_SYMBOL_TABLE_H_
#define HANGWATCH_SYMBOLS_ELF_SYMBOL_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "symbols/elf_file.h"

namespace hangwatch::symbols {

// Which ELF symbols name code, and which one an address gets when several start there. Both
// read .symtab, else .dynsym together with the .symtab embedded in .gnu_debugdata.
enum class ElfSymbolPolicy {
  // In process (ElfSymbolTable): STT_FUNC and STT_GNU_IFUNC symbols with a name and a nonzero
  // address, version suffixes dropped ("memcpy@@GLIBC_2.14" is "memcpy"); among aliases, global
  // over weak over local, and sized over unsized. A file with a .symtab section uses only it.
  kFunctions,
  // As llvm-symbolizer (LLVM 14 SymbolizableObjectFile), for the offline index: function,
  // object, notype and ifunc symbols defined in a section, names as written; among aliases the
  // larger, then the later in table order. Local symbols carry the STT_FILE name before them.
  // A .symtab without any such symbol counts as none.
  kLlvmSymbolizer,
};

// The symbols a policy selects from one ELF file.
struct ElfSymbolSelection {
  struct Symbol {
    uint64_t addr = 0;
    uint64_t size = 0;
    std::string_view name;  // into the file's string tables (or mini_image)
    std::string_view file;  // kLlvmSymbolizer, local symbols: their STT_FILE name; else empty
  };
  std::vector<Symbol> symbols;  // sorted by address, one per address
  unsigned sources = 0;         // ElfSymbolTable::Source bits, as ElfSymbolTable::sources()
  // The inflated MiniDebugInfo image that names may point into.
  std::string mini_image;
  ElfHandle mini_elf;
};

// Fills `out` (empty) with the symbols of `elf` that `policy` selects.
void SelectElfSymbols(Elf* elf, ElfSymbolPolicy policy, ElfSymbolSelection* out);

class ElfSymbolTable {
 public:
  // Which symbol tables contributed (for diagnostics and tests).
  enum Source : unsigned { kSymtab = 1, kDynsym = 2, kMiniDebugInfo = 4 };

  struct Symbol {
    uint64_t addr = 0;
    uint64_t size = 0;  // 0 when the symbol table does not say
    uint32_t name = 0;  // offset into names_
  };

  // Reads the symbols of the ELF file at `path`. Errors (missing, not ELF, truncated) are
  // returned, never thrown; a file without any function symbol yields an empty table.
  static absl::StatusOr<std::unique_ptr<ElfSymbolTable>> Load(const std::string& path);
  // Same, from an open libelf handle (the table copies what it keeps).
  static absl::StatusOr<std::unique_ptr<ElfSymbolTable>> FromElf(Elf* elf);
  // Same, from an ELF image in memory (copied as needed; `image` may be freed afterwards).
  static absl::StatusOr<std::unique_ptr<ElfSymbolTable>> LoadFromMemory(std::string_view image);

  ~ElfSymbolTable();
  ElfSymbolTable(const ElfSymbolTable&) = delete;
  ElfSymbolTable& operator=(const ElfSymbolTable&) = delete;

  // The symbol containing `vaddr`, or nullptr. A symbol without a size covers everything up to
  // the next symbol.
  const Symbol* Find(uint64_t vaddr) const;
  // The symbol at or below `vaddr` nearest to it, whatever its size says, or nullptr.
  const Symbol* FindAtOrBelow(uint64_t vaddr) const;

  std::string_view MangledName(const Symbol& s) const;
  // Demangled (symbols/demangle.h); the mangled name when it is not C++.
  std::string_view DemangledName(const Symbol& s) const;

  size_t size() const { return symbols_.size(); }
  unsigned sources() const { return sources_; }

 private:
  ElfSymbolTable() = default;
  friend class ElfSymbolTableBuilder;

  std::vector<Symbol> symbols_;  // sorted by addr, one per address
  std::string names_;            // NUL-terminated mangled names
  unsigned sources_ = 0;
  // One slot per symbol: nullptr until demangled; then a heap string owned by this table.
  std::unique_ptr<std::atomic<const std::string*>[]> demangled_;
};

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_ELF_SYMBOL_TABLE_H_
