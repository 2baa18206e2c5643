// InProcessSymbolizer: function names for addresses of this process, from each module's
// .symtab, else .dynsym, else .gnu_debugdata (MiniDebugInfo), demangled. A sorted index per
// module, built lazily on first use; never used on the capture path.
#ifndef HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_
#define HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "symbols/module_map.h"

namespace hangwatch::symbols {

struct SymbolInfo {
  std::string name;              // demangled; empty when unknown
  uint64_t function_offset = 0;  // address - start of the function
};

// Looks up `addr`. Return addresses are looked up at addr - 1 (pass is_return_address = true
// for every frame but the interrupted pc). Thread-safe. Returns false when unknown.
bool SymbolizeInProcess(uintptr_t addr, bool is_return_address, SymbolInfo* out);

// The allocation-free form, for symbolizing a whole stack: the caller takes one snapshot
// (CurrentModuleMap()) per stack, so the loaded-libraries check is paid once, not per frame.
// The views stay valid for the life of the process (per-module tables are never freed).
struct SymbolView {
  std::string_view mangled;
  std::string_view demangled;  // set only when asked for (demangling is cached per symbol)
  uint64_t function_offset = 0;
  const Module* module = nullptr;
  uint64_t module_offset = 0;  // ELF virtual address in `module`
};
bool LookupInProcess(const ModuleMap& map, uintptr_t addr, bool is_return_address, bool demangle,
                     SymbolView* out);

// Names `offset` (ELF virtual address) of module `m`, which need not be loaded in this process
// (a module of a process that died, from an open-hang file): the same tables, chosen the same
// way, as SymbolizeInProcess reads for a module loaded here (the file at m.path when its
// build-id is m.build_id, else the debug file installed for that build-id), so the two name a
// frame alike. `offset` is looked up at offset - 1 for a return address.
bool SymbolizeModuleOffset(const Module& m, uint64_t offset, bool is_return_address,
                           SymbolInfo* out);

class ElfSymbolTable;
// The function symbols SymbolizeInProcess and SymbolizeModuleOffset name `m`'s code with
// (loaded on first use, kept for the life of the process), or nullptr when there are none.
const ElfSymbolTable* ModuleSymbolTable(const Module& m);

// Reads every module's symbol table now (e.g. on the watchdog thread at start-up), so that
// later lookups never touch the disk.
void WarmUpInProcessSymbolizer(const ModuleMap& map);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_
