// ElfFile: an open ELF file (descriptor + libelf handle) and small helpers on libelf handles:
// section bytes by name, GNU build-id, .gnu_debuglink. Every helper tolerates malformed input
// (returns empty) because the files come from users.
#ifndef HANGWATCH_SYMBOLS_ELF_FILE_H_
#define HANGWATCH_SYMBOLS_ELF_FILE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace hangwatch::symbols {

// The largest file read whole as debug information (a file with DWARF, a .gnu_debuglink target
// whose CRC is checked): 4 GiB, above the debug files of large C++ programs (1 to 3 GB), far
// below a sparse or endless file someone may have put in their place. A larger file is skipped,
// with the reason among the rejected candidates.
inline constexpr uint64_t kMaxDebugFileBytes = uint64_t{4} << 30;

// Calls elf_version() once per process.
void ElfLibraryInit();

struct ElfEnd {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfEnd>;

class ElfFile {
 public:
  // Opens and validates `path` as an ELF file (errors: missing, unreadable, not ELF).
  static absl::StatusOr<std::unique_ptr<ElfFile>> Open(const std::string& path);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  Elf* elf() const { return elf_.get(); }
  int fd() const { return fd_; }
  // Closes the descriptor; elf() stays usable (libelf mapped the whole file at Open and reads
  // nothing more through it). For handles kept for the process's life (caches): a kept
  // descriptor is one the program sees, and a daemon that closes every descriptor it did not
  // open would pull it from under libelf. fd() is -1 afterwards.
  void ReleaseDescriptor();
  const std::string& path() const { return path_; }

 private:
  ElfFile() = default;
  std::string path_;
  int fd_ = -1;
  ElfHandle elf_;
};

// The raw (possibly compressed) bytes of the first section called `name`; empty when absent,
// NOBITS or out of the file's bounds.
std::string_view SectionBytes(Elf* elf, std::string_view name);

// Lowercase hex NT_GNU_BUILD_ID from the note sections or PT_NOTE segments; empty when absent.
std::string ReadBuildId(Elf* elf);

// The ELF image embedded xz-compressed in .gnu_debugdata (MiniDebugInfo): empty when absent,
// an error when it does not inflate (or inflates past 256 MB).
absl::StatusOr<std::string> InflateMiniDebugInfo(Elf* elf);

// Calls `fn(sym, name, file)` for every symbol of every section of `type` (SHT_SYMTAB or
// SHT_DYNSYM) whose name is readable, except the STT_FILE entries: `file` is the name of the
// last STT_FILE seen before a local symbol ("" for the others). The linked string table is
// read directly, with libelf's checks (a string table, the name inside it, NUL-terminated):
// elf_strptr takes a lock and re-checks the section on every call, a tenth of a cold lookup.
// Callers filter by type, binding and section.
void ForEachElfSymbol(
    Elf* elf, Elf64_Word type,
    absl::FunctionRef<void(const GElf_Sym& sym, const char* name, std::string_view file)> fn);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_ELF_FILE_H_
