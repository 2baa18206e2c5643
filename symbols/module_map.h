// ModuleMap: the modules (executable and shared objects) loaded in this process, with their
// load bias, executable ranges and GNU build-id, and address -> (module, offset) lookups.
//
// `offset` is always the ELF virtual address (runtime address minus load bias): the address that
// llvm-symbolizer --obj, `hangwatch symbolize` and the DWARF index expect, whatever layout the
// linker chose (ld.bfd and lld place segments differently).
#ifndef HANGWATCH_SYMBOLS_MODULE_MAP_H_
#define HANGWATCH_SYMBOLS_MODULE_MAP_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hangwatch::symbols {

struct AddressRange {
  uintptr_t lo = 0;  // runtime addresses, [lo, hi)
  uintptr_t hi = 0;
};

struct Module {
  std::string path;         // as the dynamic loader reports it; the main program's real path
  uintptr_t load_bias = 0;  // dlpi_addr
  std::vector<AddressRange> exec_ranges;  // PT_LOAD segments with PF_X
  std::string build_id;                   // lowercase hex of NT_GNU_BUILD_ID, empty when absent
};

// One address resolved to a module.
struct ModuleAddress {
  const Module* module = nullptr;  // nullptr when no module's executable range holds it
  uint64_t offset = 0;             // ELF virtual address: runtime address - load_bias
};

// An immutable snapshot. Cheap to share; lookups are O(log n) and take no lock.
class ModuleMap {
 public:
  // Reads the current modules with dl_iterate_phdr. Not for the capture path (allocates).
  static std::shared_ptr<const ModuleMap> Snapshot();

  ModuleAddress Find(uintptr_t addr) const;
  std::span<const Module> modules() const { return modules_; }

  // Builds a map from explicit modules (tests, offline reports).
  explicit ModuleMap(std::vector<Module> modules);

 private:
  std::vector<Module> modules_;
  // exec ranges sorted by lo, each pointing at its module
  std::vector<std::pair<AddressRange, uint32_t>> ranges_;
};

// The current ModuleMap, refreshed only when dlpi_adds/dlpi_subs say modules were loaded or
// unloaded since the last refresh. Current() is safe from any thread except the capture path.
std::shared_ptr<const ModuleMap> CurrentModuleMap();

// The map most recently published by CurrentModuleMap(), or nullptr before its first call.
// Safe on the capture path: one acquire load, no lock, no allocation; every map ever published
// stays alive until the process exits, so the pointer never dangles. Refreshing is the job of
// CurrentModuleMap() on a normal thread (e.g. the watchdog before each capture).
const ModuleMap* PublishedModuleMap();

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_MODULE_MAP_H_
