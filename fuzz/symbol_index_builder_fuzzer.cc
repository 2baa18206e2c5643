// libFuzzer target: the index builder (libelf + libdw + our DWARF walk, decompression, symbol
// tables, MiniDebugInfo) on arbitrary / mutated ELF files, then lookups in the result. Seeded
// with real binaries by the test that runs it.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "symbols/elf_symbol_table.h"
#include "symbols/index/symbol_index.h"
#include "symbols/index/symbol_index_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hangwatch::symbols;  // NOLINT(build/namespaces)
  // In the scratch directory, removed at exit (each run of the target used to leave a file in
  // /tmp).
  const std::string path = hangwatch::fuzz::ScratchDir() + "/input.elf";
  hangwatch::fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));

  auto table =
      ElfSymbolTable::LoadFromMemory(std::string_view(reinterpret_cast<const char*>(data), size));
  if (table.ok()) {
    for (uint64_t a : {uint64_t{0x1000}, uint64_t{0x401000}, uint64_t{0x1139}}) {
      if (auto* s = (*table)->Find(a)) (void)(*table)->DemangledName(*s);
    }
  }

  SymbolIndexOptions options;
  options.debug_path = options.symbols_path = path;
  options.threads = 1;
  auto bytes = BuildSymbolIndex(options);
  if (!bytes.ok()) return 0;
  auto index = SymbolIndex::FromBytes(std::move(*bytes));
  if (!index.ok()) __builtin_trap();  // the builder's own output must always load
  SymbolizedAddress out;
  std::string text;
  for (uint64_t a = 0; a < 0x3000; a += 0x11) {
    (*index)->Lookup(a, &out);
    (*index)->Lookup(a + 0x400000, &out);
    AppendLlvmStyle(out, &text);
  }
  return 0;
}
