// SymbolizeInProcess: module map + one lazily loaded ElfSymbolTable per module.
#include "symbols/in_process_symbolizer.h"

#include <memory>
#include <string>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/module_map.h"

namespace hangwatch::symbols {
namespace {

// One module's table, loaded at most once. `table` stays null when the file is missing,
// unreadable, not ELF, or not the file that was loaded (build-id mismatch).
struct Slot {
  absl::once_flag once;
  std::unique_ptr<ElfSymbolTable> table;
};

class TableCache {
 public:
  // The table for `m` (loading it on first use), or nullptr.
  const ElfSymbolTable* Get(const Module& m) {
    Slot* slot = nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = by_module_.try_emplace(&m, nullptr);
      if (inserted) {
        // Modules of successive snapshots are different objects; share the table between
        // them when the path, bias and build-id match.
        auto& shared = by_identity_[Identity(m)];
        if (shared == nullptr) shared = std::make_shared<Slot>();
        it->second = shared.get();
      }
      slot = it->second;
    }
    absl::call_once(slot->once, [&] { slot->table = LoadTable(m); });
    return slot->table.get();
  }

 private:
  static std::string Identity(const Module& m) {
    return m.path + '\0' + std::to_string(m.load_bias) + '\0' + m.build_id;
  }

  static std::unique_ptr<ElfSymbolTable> LoadTable(const Module& m) {
    if (m.path.empty()) return nullptr;
    auto file = ElfFile::Open(m.path);
    if (!file.ok()) return nullptr;
    // The file on disk may have been replaced since it was loaded: its names would be wrong.
    if (!m.build_id.empty() && ReadBuildId((*file)->elf()) != m.build_id) return nullptr;
    auto table = ElfSymbolTable::FromElf((*file)->elf());
    if (!table.ok()) return nullptr;
    return std::move(*table);
  }

  absl::Mutex mu_;
  // Keyed by Module address: published maps are never freed (module_map.cc), so the pointers
  // stay valid; the Slots are owned by by_identity_.
  absl::flat_hash_map<const Module*, Slot*> by_module_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Slot>> by_identity_ ABSL_GUARDED_BY(mu_);
};

TableCache& Cache() {
  static auto* cache = new TableCache;  // never destroyed: other threads may symbolize at exit
  return *cache;
}

}  // namespace

bool SymbolizeInProcess(uintptr_t addr, bool is_return_address, SymbolInfo* out) {
  if (out == nullptr) return false;
  // A return address points after the call; the call itself (and its inlining context) is
  // the byte before, which also matters when the call is the last instruction of a function.
  const uintptr_t pc = is_return_address && addr > 0 ? addr - 1 : addr;
  std::shared_ptr<const ModuleMap> map = CurrentModuleMap();
  ModuleAddress where = map->Find(pc);
  if (where.module == nullptr) return false;
  const ElfSymbolTable* table = Cache().Get(*where.module);
  if (table == nullptr) return false;
  const ElfSymbolTable::Symbol* sym = table->Find(where.offset);
  if (sym == nullptr) return false;
  out->name = std::string(table->DemangledName(*sym));
  out->function_offset = where.offset - sym->addr;
  return true;
}

}  // namespace hangwatch::symbols
