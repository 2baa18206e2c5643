// SymbolizeInProcess: module map + one lazily loaded ElfSymbolTable per module.
#include "symbols/in_process_symbolizer.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "symbols/debug_file_locator.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/module_map.h"

namespace hangwatch::symbols {
namespace {

// One module's table, loaded once. `table` stays null when the file is missing, unreadable, not
// ELF, or not the file that was loaded (build-id mismatch). A load that ran out of memory is not
// an answer: the next lookup tries again (and an exception never leaves a once-flag stuck
// half-way, which absl::call_once would: every later lookup would spin).
struct Slot {
  uintptr_t load_bias = 0;
  std::string path, build_id;
  absl::Mutex load_mu;
  std::atomic<bool> loaded{false};
  std::unique_ptr<ElfSymbolTable> table;  // written under load_mu before `loaded` is set

  bool Matches(const Module& m) const {
    return m.load_bias == load_bias && m.path == path && m.build_id == build_id;
  }
};

// Whether a 1 MB mapping fails for want of address space (RLIMIT_AS, or the whole of it).
bool OutOfAddressSpace() {
  constexpr size_t kProbe = size_t{1} << 20;
  void* p = mmap(nullptr, kProbe, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return errno == ENOMEM;
  munmap(p, kProbe);
  return false;
}

class TableCache {
 public:
  // The table for `m` (loading it on first use), or nullptr.
  const ElfSymbolTable* Get(const Module& m) {
    Slot* slot = nullptr;
    {
      absl::MutexLock lock(&mu_);
      // Fast path by Module address; checked, since a caller's snapshot may have been freed
      // and its address reused by another module.
      auto it = by_module_.find(&m);
      if (it != by_module_.end() && it->second->Matches(m)) {
        slot = it->second;
      } else {
        auto& shared = by_identity_[Identity(m)];
        if (shared == nullptr) {
          shared = std::make_shared<Slot>();
          shared->load_bias = m.load_bias;
          shared->path = m.path;
          shared->build_id = m.build_id;
        }
        slot = shared.get();
        by_module_[&m] = slot;
      }
    }
    if (!slot->loaded.load(std::memory_order_acquire)) {
      absl::MutexLock lock(&slot->load_mu);
      if (!slot->loaded.load(std::memory_order_relaxed)) {
        std::unique_ptr<ElfSymbolTable> table;
        try {
          table = LoadTable(m);
        } catch (const std::bad_alloc&) {
          return nullptr;  // unnamed for now
        }
        // libelf reports a section it could not allocate as missing: "no names" found while
        // the process cannot even map 1 MB is the shortage's answer, not the module's.
        if ((table == nullptr || table->size() == 0) && OutOfAddressSpace()) return nullptr;
        slot->table = std::move(table);
        slot->loaded.store(true, std::memory_order_release);
      }
    }
    return slot->table.get();
  }

 private:
  static std::string Identity(const Module& m) {
    return m.path + '\0' + std::to_string(m.load_bias) + '\0' + m.build_id;
  }

  static std::unique_ptr<ElfSymbolTable> LoadTable(const Module& m) {
    if (std::string_view vdso = VdsoImage(m); !vdso.empty()) {
      // Its .dynsym names the exported functions only; the kernel's debug package (e.g.
      // Debian's linux-image-*-dbg) has the full .symtab by build-id, with the static helpers
      // (vread_pvclock on a KVM guest, ...).
      if (auto full = LoadDebugSymtab(m); full != nullptr) return full;
      auto table = ElfSymbolTable::LoadFromMemory(vdso);
      return table.ok() ? std::move(*table) : nullptr;
    }
    if (m.path.empty()) return nullptr;
    auto file = ElfFile::Open(m.path);
    if (!file.ok()) return nullptr;
    // The file on disk may have been replaced since it was loaded: its names would be wrong.
    if (!m.build_id.empty() && ReadBuildId((*file)->elf()) != m.build_id) return nullptr;
    auto table = ElfSymbolTable::FromElf((*file)->elf());
    if (!table.ok()) return nullptr;
    if (((*table)->sources() & ElfSymbolTable::kSymtab) == 0) {
      // Stripped (only .dynsym): the separate debug file installed for this build (Debian's
      // *-dbg / *-dbgsym packages under /usr/lib/debug/.build-id) has the full .symtab, with
      // the local functions that `hangwatch report` names from it too.
      auto full = LoadDebugSymtab(m);
      if (full != nullptr && full->size() >= (*table)->size()) return full;
    }
    return std::move(*table);
  }

  // The .symtab of the debug file installed for m's build-id, or nullptr.
  static std::unique_ptr<ElfSymbolTable> LoadDebugSymtab(const Module& m) {
    if (m.build_id.empty()) return nullptr;
    DebugFileSearch search;
    const std::string debug = FindDebugFileByBuildId(m.build_id, &search);
    if (debug.empty()) return nullptr;
    auto full = ElfSymbolTable::Load(debug);
    if (!full.ok() || ((*full)->sources() & ElfSymbolTable::kSymtab) == 0) return nullptr;
    return std::move(*full);
  }

  // The vDSO's ELF image, mapped by the kernel (AT_SYSINFO_EHDR) and listed by the loader as
  // "linux-vdso.so.1" without a file: read from memory. Empty for any other module.
  static std::string_view VdsoImage(const Module& m) {
    const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0 || m.exec_ranges.empty() || (!m.path.empty() && m.path[0] == '/')) return {};
    const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(base);
    if (std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 ||
        ehdr->e_phentsize != sizeof(ElfW(Phdr))) {
      return {};
    }
    // The image ends with its section headers; the kernel maps it whole (whole pages).
    const size_t size = ehdr->e_shoff + size_t{ehdr->e_shnum} * ehdr->e_shentsize;
    size_t mapped = 0;
    const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(base + ehdr->e_phoff);
    for (int i = 0; i < ehdr->e_phnum; ++i) {
      if (phdr[i].p_type == PT_LOAD) {
        mapped = std::max<size_t>(mapped, phdr[i].p_offset + phdr[i].p_filesz);
      }
    }
    mapped = (mapped + 4095) & ~size_t{4095};
    if (size == 0 || size > mapped || mapped > (1u << 20)) return {};
    // The module is the vDSO when its code lies in that image.
    const uintptr_t code = m.exec_ranges.front().lo;
    if (code < base || code >= base + mapped) return {};
    return std::string_view(reinterpret_cast<const char*>(base), size);
  }

  absl::Mutex mu_;
  absl::flat_hash_map<const Module*, Slot*> by_module_ ABSL_GUARDED_BY(mu_);
  // Owns the slots; never shrinks, so views into tables stay valid.
  absl::flat_hash_map<std::string, std::shared_ptr<Slot>> by_identity_ ABSL_GUARDED_BY(mu_);
};

TableCache& Cache() {
  static auto* cache = new TableCache;  // never destroyed: other threads may symbolize at exit
  return *cache;
}

}  // namespace

bool LookupInProcess(const ModuleMap& map, uintptr_t addr, bool is_return_address, bool demangle,
                     SymbolView* out) {
  if (out == nullptr) return false;
  // A return address points after the call; the call itself (and its inlining context) is
  // the byte before, which also matters when the call is the last instruction of a function.
  const uintptr_t pc = is_return_address && addr > 0 ? addr - 1 : addr;
  ModuleAddress where = map.Find(pc);
  if (where.module == nullptr) return false;
  const ElfSymbolTable* table = Cache().Get(*where.module);
  if (table == nullptr) return false;
  const ElfSymbolTable::Symbol* sym = table->Find(where.offset);
  if (sym == nullptr) return false;
  out->mangled = table->MangledName(*sym);
  out->demangled = demangle ? table->DemangledName(*sym) : std::string_view();
  out->function_offset = where.offset - sym->addr;
  out->module = where.module;
  out->module_offset = where.offset;
  return true;
}

bool SymbolizeInProcess(uintptr_t addr, bool is_return_address, SymbolInfo* out) {
  if (out == nullptr) return false;
  std::shared_ptr<const ModuleMap> map = CurrentModuleMap();
  SymbolView view;
  if (!LookupInProcess(*map, addr, is_return_address, /*demangle=*/true, &view)) return false;
  out->name = std::string(view.demangled);
  out->function_offset = view.function_offset;
  return true;
}

bool SymbolizeModuleOffset(const Module& m, uint64_t offset, bool is_return_address,
                           SymbolInfo* out) {
  if (out == nullptr) return false;
  const uint64_t at = is_return_address && offset > 0 ? offset - 1 : offset;
  const Module* from = &m;
  std::shared_ptr<const ModuleMap> here;
  if (m.path.empty() || m.path[0] != '/') {
    // No file (the vDSO): this process's image of it, when it is the same build.
    if (m.build_id.empty()) return false;
    here = CurrentModuleMap();
    from = nullptr;
    for (const Module& local : here->modules()) {
      if (local.build_id == m.build_id) from = &local;
    }
    if (from == nullptr) return false;
  }
  const ElfSymbolTable* table = Cache().Get(*from);
  if (table == nullptr) return false;
  const ElfSymbolTable::Symbol* sym = table->Find(at);
  if (sym == nullptr) return false;
  out->name = std::string(table->DemangledName(*sym));
  out->function_offset = at - sym->addr;
  return true;
}

const ElfSymbolTable* ModuleSymbolTable(const Module& m) { return Cache().Get(m); }

void WarmUpInProcessSymbolizer(const ModuleMap& map) {
  for (const Module& m : map.modules()) Cache().Get(m);
}

}  // namespace hangwatch::symbols
