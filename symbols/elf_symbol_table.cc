// ElfSymbolTable: reading .symtab / .dynsym / .gnu_debugdata with libelf.
#include "symbols/elf_symbol_table.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

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
  std::string_view file;
  int rank;  // kFunctions: higher wins among aliases at one address
};

// Appends the symbols of every section of `type` in `elf` that `policy` keeps.
void CollectSymbols(Elf* elf, Elf64_Word type, ElfSymbolPolicy policy,
                    std::vector<RawSymbol>* out) {
  ForEachElfSymbol(elf, type, [&](const GElf_Sym& sym, const char* name, std::string_view file) {
    const int st_type = GELF_ST_TYPE(sym.st_info);
    if (policy == ElfSymbolPolicy::kLlvmSymbolizer) {
      if (st_type != STT_NOTYPE && st_type != STT_FUNC && st_type != STT_OBJECT &&
          st_type != STT_GNU_IFUNC) {
        return;
      }
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return;
      out->push_back({sym.st_value, sym.st_size, name, file, 0});
      return;
    }
    if (st_type != STT_FUNC && st_type != STT_GNU_IFUNC) return;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || name[0] == '\0') return;
    const int bind = GELF_ST_BIND(sym.st_info);
    int rank = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1;
    if (sym.st_size != 0) rank += 4;
    // A .symtab names versioned definitions "memcpy@@GLIBC_2.14" / "memcpy@GLIBC_2.2.5":
    // the function is "memcpy", as .dynsym and DWARF name it.
    std::string_view n(name);
    if (const size_t at = n.find('@'); at != n.npos && at > 0) n = n.substr(0, at);
    out->push_back({sym.st_value, sym.st_size, n, {}, rank});
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

// One symbol per address, the one `policy` prefers.
void KeepOnePerAddress(ElfSymbolPolicy policy, std::vector<RawSymbol>* raw) {
  size_t kept = 0;
  if (policy == ElfSymbolPolicy::kLlvmSymbolizer) {
    std::stable_sort(raw->begin(), raw->end(), [](const RawSymbol& a, const RawSymbol& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.size < b.size;
    });
    for (size_t i = 0; i < raw->size(); ++i) {
      if (kept > 0 && (*raw)[kept - 1].addr == (*raw)[i].addr) {
        (*raw)[kept - 1] = (*raw)[i];
      } else {
        (*raw)[kept++] = (*raw)[i];
      }
    }
  } else {
    std::sort(raw->begin(), raw->end(), [](const RawSymbol& a, const RawSymbol& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.rank > b.rank;
    });
    for (size_t i = 0; i < raw->size(); ++i) {
      if (kept > 0 && (*raw)[kept - 1].addr == (*raw)[i].addr) continue;
      (*raw)[kept++] = (*raw)[i];
    }
  }
  raw->resize(kept);
}

}  // namespace

void SelectElfSymbols(Elf* elf, ElfSymbolPolicy policy, ElfSymbolSelection* out) {
  std::vector<RawSymbol> raw;
  const bool has_symtab = HasSection(elf, SHT_SYMTAB);
  if (has_symtab) {
    CollectSymbols(elf, SHT_SYMTAB, policy, &raw);
    out->sources |= ElfSymbolTable::kSymtab;
  }
  if (!has_symtab || (policy == ElfSymbolPolicy::kLlvmSymbolizer && raw.empty())) {
    CollectSymbols(elf, SHT_DYNSYM, policy, &raw);
    if (!raw.empty()) out->sources |= ElfSymbolTable::kDynsym;
    auto image = InflateMiniDebugInfo(elf);
    if (image.ok() && !image->empty()) {
      out->mini_image = std::move(*image);
      out->mini_elf.reset(elf_memory(out->mini_image.data(), out->mini_image.size()));
      if (out->mini_elf != nullptr && elf_kind(out->mini_elf.get()) == ELF_K_ELF) {
        const size_t before = raw.size();
        CollectSymbols(out->mini_elf.get(), SHT_SYMTAB, policy, &raw);
        if (raw.size() > before) out->sources |= ElfSymbolTable::kMiniDebugInfo;
      }
    }
  }
  KeepOnePerAddress(policy, &raw);
  out->symbols.reserve(raw.size());
  for (const RawSymbol& r : raw) out->symbols.push_back({r.addr, r.size, r.name, r.file});
}

class ElfSymbolTableBuilder {
 public:
  static absl::StatusOr<std::unique_ptr<ElfSymbolTable>> Build(Elf* elf) {
    if (elf_kind(elf) != ELF_K_ELF) return absl::InvalidArgumentError("not an ELF file");
    GElf_Ehdr ehdr;
    if (gelf_getehdr(elf, &ehdr) == nullptr) {
      return absl::DataLossError(absl::StrCat("bad ELF header: ", elf_errmsg(-1)));
    }
    auto table = std::unique_ptr<ElfSymbolTable>(new ElfSymbolTable);
    ElfSymbolSelection selected;
    SelectElfSymbols(elf, ElfSymbolPolicy::kFunctions, &selected);
    table->sources_ = selected.sources;
    table->symbols_.reserve(selected.symbols.size());
    for (const ElfSymbolSelection::Symbol& s : selected.symbols) {
      table->symbols_.push_back({s.addr, s.size, static_cast<uint32_t>(table->names_.size())});
      table->names_.append(s.name);
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

const ElfSymbolTable::Symbol* ElfSymbolTable::FindAtOrBelow(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const Symbol& s) { return a < s.addr; });
  return it == symbols_.begin() ? nullptr : &*std::prev(it);
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
