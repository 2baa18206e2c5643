#include "symbols/function_start.h"

#include <elfutils/libdw.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/in_process_symbolizer.h"

namespace hangwatch::symbols {
namespace {

// One module file's CFI, opened on first use. `cfi` stays null when the file is missing, not
// the build that ran (build-id mismatch), or has no CFI. libdw caches what it decodes inside
// the Dwarf_CFI without a lock of its own: lookups hold `mu`.
struct ModuleCfi {
  absl::Mutex mu;
  bool opened = false;
  std::unique_ptr<ElfFile> file;
  Dwarf_CFI* cfi = nullptr;

  ~ModuleCfi() {
    if (cfi != nullptr) dwarf_cfi_end(cfi);
  }

  void Open(const Module& m) {
    opened = true;
    if (m.path.empty() || m.path[0] != '/') return;  // the vDSO, a module without a file
    auto f = ElfFile::Open(m.path);
    if (!f.ok()) return;
    if (!m.build_id.empty() && ReadBuildId((*f)->elf()) != m.build_id) return;
    file = std::move(*f);
    cfi = dwarf_getcfi_elf(file->elf());
    file->ReleaseDescriptor();  // kept for the process's life: the mapping, not a descriptor
  }

  // The FDE range start holding `offset`.
  bool FdeStart(uint64_t offset, uint64_t* start) {
    if (cfi == nullptr) return false;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi, offset, &frame) != 0 || frame == nullptr) return false;
    Dwarf_Addr lo = 0, hi = 0;
    bool signal = false;
    const bool ok = dwarf_frame_info(frame, &lo, &hi, &signal) >= 0 && lo <= offset && offset < hi;
    std::free(frame);
    if (ok) *start = lo;
    return ok;
  }
};

class CfiCache {
 public:
  ModuleCfi* Get(const Module& m) {
    absl::MutexLock lock(&mu_);
    auto& slot = by_identity_[m.path + '\0' + m.build_id];
    if (slot == nullptr) slot = std::make_unique<ModuleCfi>();
    return slot.get();
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<ModuleCfi>> by_identity_ ABSL_GUARDED_BY(mu_);
};

CfiCache& Cache() {
  static auto* cache = new CfiCache;  // never destroyed: other threads may look up at exit
  return *cache;
}

}  // namespace

bool FunctionStartInModule(const Module& m, uint64_t offset, uint64_t* start) {
  const ElfSymbolTable* table = ModuleSymbolTable(m);
  if (table != nullptr) {
    if (const ElfSymbolTable::Symbol* sym = table->Find(offset); sym != nullptr) {
      *start = sym->addr;
      return true;
    }
  }
  ModuleCfi* cfi = Cache().Get(m);
  {
    absl::MutexLock lock(&cfi->mu);
    if (!cfi->opened) cfi->Open(m);
    if (cfi->FdeStart(offset, start)) return true;
  }
  if (table != nullptr) {
    if (const ElfSymbolTable::Symbol* sym = table->FindAtOrBelow(offset); sym != nullptr) {
      *start = sym->addr;
      return true;
    }
  }
  return false;
}

}  // namespace hangwatch::symbols
