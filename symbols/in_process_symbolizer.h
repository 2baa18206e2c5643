// InProcessSymbolizer: function names for addresses of this process, from each module's
// .symtab, else .dynsym, else .gnu_debugdata (MiniDebugInfo), demangled. A sorted index per
// module, built lazily on first use; never used on the capture path.
#ifndef HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_
#define HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_

#include <cstdint>
#include <string>

namespace hangwatch::symbols {

struct SymbolInfo {
  std::string name;              // demangled; empty when unknown
  uint64_t function_offset = 0;  // address - start of the function
};

// Looks up `addr`. Return addresses are looked up at addr - 1 (pass is_return_address = true
// for every frame but the interrupted pc). Thread-safe. Returns false when unknown.
bool SymbolizeInProcess(uintptr_t addr, bool is_return_address, SymbolInfo* out);

}  // namespace hangwatch::symbols

#endif  // HANGWATCH_SYMBOLS_IN_PROCESS_SYMBOLIZER_H_
