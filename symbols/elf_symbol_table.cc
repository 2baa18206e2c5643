// ElfSymbolTable: reading .symtab / .dynsym / .gnu_debugdata with libelf.
#include "symbols/elf_symbol_table.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbols/demangle.h"
#include "symbols/elf_file.h"

namespace hangwatch::symbols {

namespace {

struct RawSymbol {
  uint64_t addr;
  uint64_t size;
  std::string_view name;
  int rank;  // higher wins among aliases at one address
};

// Appends the function symbols of every section of `type` in `elf`.
void CollectSymbols(Elf* elf, Elf64_Word type, std::vector<RawSymbol>* out) {
  ForEachElfSymbol(elf, type, [&](const GElf_Sym& sym, const char* name, std::string_view) {
    const int st_type = GELF_ST_TYPE(sym.st_info);
    if (st_type != STT_FUNC && st_type != STT_GNU_IFUNC) return;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || name[0] == '\0') return;
    const int bind = GELF_ST_BIND(sym.st_info);
    int rank = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1;
    if (sym.st_size != 0) rank += 4;
    // A .symtab names versioned definitions "memcpy@@GLIBC_2.14" / "memcpy@GLIBC_2.2.5":
    // the function is "memcpy", as .dynsym and DWARF name it.
    std::string_view n(name);
    if (const size_t at = n.find('@'); at != n.npos && at > 0) n = n.substr(0, at);
    out->push_back({sym.st_value, sym.st_size, n, rank});
  });
}

bool HasSection(Elf* elf, Elf64_Word type) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == type) return true;
  }
  return false;
}

}  // namespace

class ElfSymbolTableBuilder {
 public:
  static absl::StatusOr<std::unique_ptr<ElfSymbolTable>> Build(Elf* elf) {
    if (elf_kind(elf) != ELF_K_ELF) return absl::InvalidArgumentError("not an ELF file");
    GElf_Ehdr ehdr;
    if (gelf_getehdr(elf, &ehdr) == nullptr) {
      return absl::DataLossError(absl::StrCat("bad ELF header: ", elf_errmsg(-1)));
    }
    std::vector<RawSymbol> raw;
    auto table = std::unique_ptr<ElfSymbolTable>(new ElfSymbolTable);
    std::string mini;  // keeps the MiniDebugInfo image alive while `raw` points into it
    ElfHandle mini_elf;
    if (HasSection(elf, SHT_SYMTAB)) {
      CollectSymbols(elf, SHT_SYMTAB, &raw);
      table->sources_ |= ElfSymbolTable::kSymtab;
    } else {
      CollectSymbols(elf, SHT_DYNSYM, &raw);
      if (!raw.empty()) table->sources_ |= ElfSymbolTable::kDynsym;
      {
        auto image = InflateMiniDebugInfo(elf);
        if (image.ok() && !image->empty()) {
          mini = std::move(*image);
          mini_elf.reset(elf_memory(mini.data(), mini.size()));
          if (mini_elf != nullptr && elf_kind(mini_elf.get()) == ELF_K_ELF) {
            const size_t before = raw.size();
            CollectSymbols(mini_elf.get(), SHT_SYMTAB, &raw);
            if (raw.size() > before) table->sources_ |= ElfSymbolTable::kMiniDebugInfo;
          }
        }
      }
    }
    std::sort(raw.begin(), raw.end(), [](const RawSymbol& a, const RawSymbol& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.rank > b.rank;
    });
    for (const RawSymbol& r : raw) {
      if (!table->symbols_.empty() && table->symbols_.back().addr == r.addr) continue;
      table->symbols_.push_back({r.addr, r.size, static_cast<uint32_t>(table->names_.size())});
      table->names_.append(r.name);
      table->names_.push_back('\0');
    }
    table->demangled_ = std::make_unique<std::atomic<const std::string*>[]>(table->symbols_.size());
    for (size_t i = 0; i < table->symbols_.size(); ++i) table->demangled_[i] = nullptr;
    return table;
  }
};

absl::StatusOr<std::unique_ptr<ElfSymbolTable>> ElfSymbolTable::Load(const std::string& path) {
  auto file = ElfFile::Open(path);
  if (!file.ok()) return file.status();
  return ElfSymbolTableBuilder::Build((*file)->elf());
}

absl::StatusOr<std::unique_ptr<ElfSymbolTable>> ElfSymbolTable::FromElf(Elf* elf) {
  return ElfSymbolTableBuilder::Build(elf);
}

absl::StatusOr<std::unique_ptr<ElfSymbolTable>> ElfSymbolTable::LoadFromMemory(
    std::string_view image) {
  std::string copy(image);
  ElfLibraryInit();
  ElfHandle elf(elf_memory(copy.data(), copy.size()));
  if (elf == nullptr) return absl::InvalidArgumentError("not an ELF image");
  return ElfSymbolTableBuilder::Build(elf.get());
}

ElfSymbolTable::~ElfSymbolTable() {
  for (size_t i = 0; i < symbols_.size(); ++i) delete demangled_[i].load();
}

const ElfSymbolTable::Symbol* ElfSymbolTable::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const Symbol& s) { return a < s.addr; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (it->size != 0 && vaddr - it->addr >= it->size) return nullptr;
  return &*it;
}

std::string_view ElfSymbolTable::MangledName(const Symbol& s) const {
  return std::string_view(names_.data() + s.name);
}

std::string_view ElfSymbolTable::DemangledName(const Symbol& s) const {
  const size_t i = static_cast<size_t>(&s - symbols_.data());
  const std::string* cached = demangled_[i].load(std::memory_order_acquire);
  if (cached == nullptr) {
    auto* fresh = new std::string(Demangle(MangledName(s)));
    const std::string* expected = nullptr;
    if (demangled_[i].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
      cached = fresh;
    } else {
      delete fresh;  // another thread won; use its copy
      cached = expected;
    }
  }
  return *cached;
}

}  // namespace hangwatch::symbols
